# Prepared at the end of session 37 (branch s37-cuda-into): attention_varlen_into on CUDA.
# Session 37's call 6 failed gpu_varlen_into on its first misaligned case (F32, ALiBi per
# head): the into-path's slopes kept a stride-0 broadcast layout after Tensor::copy, so the
# kernel read batch x heads floats from a heads-long buffer (fixed on the branch, 6aa8810,
# not yet run). Build the pack from the branch: lab/pack-h90.sh s38a, rename to h90-s38a-9.
# The new test, memcheck of it, the error test and the launchers' regression tests.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s38a "" gpu_varlen_into gpu_errors gpu_hopper_prefill gpu_decode gpu_varlen_sweep_bf16 gpu_varlen_sweep_f32 gpu_varlen_paged_decode gpu_output_poisoned gpu_lse
  (cd /tmp/s38a && FUSED_ATTN_INTO_CASES=12 timeout 240 compute-sanitizer --tool memcheck bin/gpu gpu_varlen_into --exact --nocapture > "$R/san_into.log" 2>&1
   echo "memcheck into rc=$?"; grep -E "SUMMARY|test result|gpu_varlen_into:" "$R/san_into.log" | tail -3)
}
archived body
