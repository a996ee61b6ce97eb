# Session 36 call 2: main's kept kernels (pack s35u = dfbba1b, the trimmed last key block; the
# full pack) through what session 35 could not run on them: the whole GPU test binary, the
# torch float64 oracle, compute-sanitizer synccheck of the sanitizer subset.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s35u 340
  gpu_tests s35u "synccheck"
}
archived body
