# Session 36 call 9: branch s36-side-stream (pack s36d): a call's GPU-resident index tensors
# read together into page-locked staging on the side stream, one wait. The ordering test and
# the varlen tests that draw device indices, then the devidx/hostidx rows, 1 round (the
# device time left). Prediction: devidx within ~10 us of hostidx (one small pinned copy
# batch and one wait per call instead of three pageable copies).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s36d "" gpu_device_indices_wait_for_their_writer gpu_packed_index_reuse gpu_varlen_sweep_bf16 gpu_sanitizer_varlen gpu_errors
  bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(dev|host)idx)_|cuda_varlen_bf16/ours_(dev|host)idx' 1 s36d
}
archived body
