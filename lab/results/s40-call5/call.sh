# Session 40 call 5: the whole GPU test binary and the torch float64 oracle on the final code
# (pack s40f = fb81a78: this session's validation changes (f32-range constants, element-count
# overflow, fallible CPU allocations, FlashAttn's k/v dtype check) and the CPU tanh; kernels as
# 992955c), then memcheck of the sanitizer subset.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s40f 330
  (cd /tmp/s40f && timeout 120 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1; echo "memcheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_memcheck.log" | tail -2)
}
archived body
