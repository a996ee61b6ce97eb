# Prepared at the end of session 36 for session 37: GPU-resident index tensors. Pack s36f =
# branch s36-side-stream at 0334f50 (the side-stream read, FUSED_ATTN_INDEX_READ=stream for
# main's read on candle's stream) with bin/lab_index_read (examples/lab_index_read.rs there).
# Found at the end of session 36: candle's default Device::new_cuda runs the per-thread default
# stream with cudarc in single-stream mode (no events recorded), so the side read falls back to
# candle's stream there; calls 7-9 measured that fallback. It applies to devices made with
# Device::new_cuda_with_stream (cudarc's multi-stream mode).
#   lab_index_read on both device kinds, side then stream: host time of one call, bursts of
#   32 calls, calls behind busy work, and the idle synchronize / 4-byte read floors.
# Reading it: default-device side == stream (the fallback; a check of the finding). On the
# with-stream device, side against stream says what the side read is worth to those users;
# the floors say how much of the 40-60 us is the wait itself.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s36f
  for dk in "" --with-stream; do for m in side stream; do
    if [ "$m" = stream ]; then export FUSED_ATTN_INDEX_READ=stream; else unset FUSED_ATTN_INDEX_READ; fi
    (cd /tmp/s36f && timeout 60 bin/lab_index_read $dk) 2>&1 | tee -a "$R/index_read.txt"
  done; done
  unset FUSED_ATTN_INDEX_READ
}
archived body
