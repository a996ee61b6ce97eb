# Prepared at the end of session 36 for session 37: where a paged decode call with GPU-resident
# index tensors spends its 40-60 us (session 36's calls 7-9). Pack s36e = branch
# s36-side-stream at 53380bc (the side-stream read, FUSED_ATTN_INDEX_READ=stream for main's
# read on candle's stream) with bin/lab_index_read (examples/lab_index_read.rs on the branch).
#   lab_index_read, side then stream: host time of one call, bursts of 32 calls, behind busy
#     work, and the machine's floors (idle synchronize, a 4-byte read through candle);
#   envab of the devidx/hostidx bench rows, side against stream, 2 rounds.
# Reading it: if `host` for devidx-side is ~hostidx + a few us, the bench's +40-60 us is the
# flush window and the side read is worth merging on the burst/busy rows; if `host` itself is
# +40-60 us, the floors say whether the wait (synchronize) or the copy costs it.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s36e
  for m in side stream; do
    if [ "$m" = stream ]; then export FUSED_ATTN_INDEX_READ=stream; else unset FUSED_ATTN_INDEX_READ; fi
    (cd /tmp/s36e && timeout 60 bin/lab_index_read) 2>&1 | tee -a "$R/index_read.txt"
  done
  unset FUSED_ATTN_INDEX_READ
  envab s36e 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(dev|host)idx)_b32' 2 FUSED_ATTN_INDEX_READ "side=unset stream=stream"
}
archived body
