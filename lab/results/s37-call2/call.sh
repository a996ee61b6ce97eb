# Session 37 call 2: the side-stream index read merged on main (pack s37a: src/cuda/indices.rs,
# the test's side-read assertions, the bench's devidx_ownstream rows, bin/lab_index_read).
#   1. the ordering test on both device kinds; the paged decode, index reuse and error tests;
#   2. the three varlen sweeps and the paged decode sweep on devices of their own stream
#      (FUSED_ATTN_TEST_OWN_STREAM=1: every GPU-index case takes the side read, asserted);
#   3. memcheck of the ordering test (host code; the kernels are main's);
#   4. lab_index_read on both device kinds (side, and FUSED_ATTN_INDEX_READ=stream);
#   5. the paged decode bench rows, 2 rounds (contiguous, hostidx, devidx, devidx_ownstream).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s37a "" gpu_device_indices_wait_for_their_writer gpu_varlen_paged_decode gpu_packed_index_reuse gpu_errors
  (cd /tmp/s37a && for t in gpu_varlen_sweep_bf16 gpu_varlen_sweep_f16 gpu_varlen_sweep_f32 gpu_varlen_paged_decode; do
     FUSED_ATTN_TEST_OWN_STREAM=1 timeout 150 bin/gpu $t --exact --nocapture > "$R/own_$t.log" 2>&1; echo "own-stream $t rc=$?"
     grep -E "^gpu_|panicked|test result" "$R/own_$t.log" | cut -c1-250 | tail -4
   done
   timeout 150 compute-sanitizer --tool memcheck bin/gpu gpu_device_indices_wait_for_their_writer --exact --nocapture > "$R/san_order.log" 2>&1
   echo "memcheck order rc=$?"; grep -E "SUMMARY|test result" "$R/san_order.log" | tail -2
   for dk in "" --with-stream; do for m in side stream; do
     if [ "$m" = stream ]; then export FUSED_ATTN_INDEX_READ=stream; else unset FUSED_ATTN_INDEX_READ; fi
     timeout 60 bin/lab_index_read $dk 2>&1 | tee -a "$R/index_read.txt"
   done; done
   unset FUSED_ATTN_INDEX_READ)
  bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(hostidx|devidx))' 2 s37a
}
archived body
