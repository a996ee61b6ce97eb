# Session 36 call 8: branch s36-side-stream (pack s36c): the ordering test with its lengths
# fixed (call 7's version built [0, 1, 1, ...]: a test bug, the host-index reference call
# failed), then why call 7's devidx rows stayed slow: the same rows with the bench's L2 flush
# as the driver's memset (default) and as a kernel's write (FUSED_ATTN_BENCH_FLUSH=kernel),
# 2 rounds alternating. Prediction: with a kernel flush the devidx rows within 2% of hostidx
# (the memset runs on a copy engine that the side stream's read queues behind).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s36c "" gpu_device_indices_wait_for_their_writer
  envab s36c 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(dev|host)idx)_b32' 2 FUSED_ATTN_BENCH_FLUSH "memset=unset kernel=kernel"
}
archived body
