# Session 31 call 3: correctness of the kept kernels (pack s31f = main with mask_hi_only and
# the plain d128 step descriptors, on top of session 30's conditional rescale, which had not
# run racecheck, the varlen sweeps, the Hopper backward, the packed/varlen gradients, the paged
# decode or the error/poison tests): the whole GPU test binary, the torch float64 oracle, then
# memcheck and racecheck of gpu_sanitizer_subset.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s31f 330
  gpu_tests s31f "memcheck racecheck"
}
archived body
