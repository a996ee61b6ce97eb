# Session 39 call 7: the whole GPU test binary (oracle skipped), then the torch float64 oracle,
# on the final tests (pack s39b: the gradient floor with the recomputed-score term; kernels as
# s39a).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s39b 380
}
archived body
