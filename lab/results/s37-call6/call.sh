# Session 37 call 6: attention_varlen_into on CUDA (pack s37c: the launchers take the caller's
# output view, src/cuda/mod.rs OutBuf/forward_into). The new test, the error test, the
# launchers' regression tests (Hopper prefill, decode, the bf16 varlen sweep, paged decode),
# memcheck of the new test.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s37c "" gpu_varlen_into gpu_errors gpu_hopper_prefill gpu_decode gpu_varlen_sweep_bf16 gpu_varlen_paged_decode gpu_output_poisoned
  (cd /tmp/s37c && timeout 120 compute-sanitizer --tool memcheck bin/gpu gpu_varlen_into --exact --nocapture > "$R/san_into.log" 2>&1
   echo "memcheck into rc=$?"; grep -E "SUMMARY|test result|gpu_varlen_into:" "$R/san_into.log" | tail -3)
}
archived body
