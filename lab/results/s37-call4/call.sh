# Session 37 call 4: the whole GPU test binary on the final code (pack s37b = 6b68687's
# library; only README and lab text changed after it), then the torch float64 oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s37b 330
}
archived body
