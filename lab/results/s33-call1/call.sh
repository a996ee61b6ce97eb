# Session 33 call 1: branch s33-sm80-tail (pack s33a, head 5e50741) -- the whole GPU test binary,
# the torch float64 oracle and compute-sanitizer memcheck/racecheck/synccheck of the sanitizer
# subset (the FattnParams move touches every kernel's params; this also covers main's per-tile
# order, whose whole-binary run was missing in session 32).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s33a 280
  gpu_tests s33a "memcheck racecheck synccheck"
}
archived body
