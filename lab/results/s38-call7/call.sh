# Session 38 call 7: the batched index read's wait as a pageable probe copy instead of
# cuStreamSynchronize (call 6: the stream synchronize made the varlen bench's GPU-index row
# 12.75 ms against 10.5 with the per-tensor read, as an explicit synchronize before a
# host-index call did: the stream-ordered pool hands its free memory back at a synchronize, and
# the output allocation after it maps memory again). Pack s38d (main + src/cuda/indices.rs's
# probe wait): lab_index_read --varlen and the paged decode mode on both device kinds, then the
# tests that read GPU indices (both device kinds).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s38d
  (cd /tmp/s38d && for dk in "" --with-stream; do
     timeout 60 bin/lab_index_read --varlen $dk 2>&1 | tee -a "$R/varlen_read.txt"
     timeout 60 bin/lab_index_read $dk 2>&1 | tee -a "$R/decode_read.txt"
   done)
  gpu_tests s38d "" gpu_device_indices_wait_for_their_writer gpu_packed_index_reuse gpu_varlen_paged_decode gpu_varlen_sweep_bf16
  (cd /tmp/s38d && FUSED_ATTN_TEST_OWN_STREAM=1 timeout 100 bin/gpu gpu_varlen_sweep_bf16 --exact --nocapture > "$R/own_sweep.log" 2>&1
   echo "own-stream sweep rc=$?"; grep -E "^gpu_|test result" "$R/own_sweep.log" | cut -c1-200 | tail -2)
}
archived body
