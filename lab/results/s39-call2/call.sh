# Session 39 call 2: the sanitizers on main after the decode-tail merge (pack s39a = fd0a74b:
# the merge buffer's swizzle and the 16-byte output stores changed the decode's shared-memory
# traffic), memcheck, racecheck and synccheck of gpu_sanitizer_subset, and gpu_lse.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s39a "memcheck racecheck synccheck" gpu_lse
}
archived body
