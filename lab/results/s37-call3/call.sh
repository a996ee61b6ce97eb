# Session 37 call 3: GPU-resident index tensors read together with one wait on candle's
# default device too (pack s37b: src/cuda/indices.rs reads on candle's stream where cudarc
# keeps no events, on a side stream where it does; FUSED_ATTN_INDEX_READ=stream = one read
# and wait per tensor, as before session 37).
#   1. the ordering test (both device kinds), the paged decode, index reuse and error tests;
#      the varlen sweeps on the default device (now its batched read) and on own-stream devices;
#   2. memcheck of the ordering test;
#   3. lab_index_read on both device kinds, batched (default) and per tensor (=stream);
#   4. the paged decode bench rows, 2 rounds;
#   5. issue 13's CPU cell on the host Xeon (bench_cpu --varlen, cores 2,3, 2 threads).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s37b "" gpu_device_indices_wait_for_their_writer gpu_varlen_paged_decode gpu_packed_index_reuse gpu_errors gpu_varlen_sweep_bf16 gpu_varlen_sweep_f32
  (cd /tmp/s37b && for t in gpu_varlen_sweep_bf16 gpu_varlen_sweep_f16 gpu_varlen_paged_decode; do
     FUSED_ATTN_TEST_OWN_STREAM=1 timeout 150 bin/gpu $t --exact --nocapture > "$R/own_$t.log" 2>&1; echo "own-stream $t rc=$?"
     grep -E "^gpu_|panicked|test result" "$R/own_$t.log" | cut -c1-200 | tail -3
   done
   timeout 150 compute-sanitizer --tool memcheck bin/gpu gpu_device_indices_wait_for_their_writer --exact --nocapture > "$R/san_order.log" 2>&1
   echo "memcheck order rc=$?"; grep -E "SUMMARY|test result" "$R/san_order.log" | tail -2
   for dk in "" --with-stream; do for m in batched stream; do
     if [ "$m" = stream ]; then export FUSED_ATTN_INDEX_READ=stream; else unset FUSED_ATTN_INDEX_READ; fi
     echo "# read=$m" >> "$R/index_read.txt"
     timeout 60 bin/lab_index_read $dk 2>&1 | tee -a "$R/index_read.txt"
   done; done
   unset FUSED_ATTN_INDEX_READ)
  bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(hostidx|devidx))' 2 s37b
  lscpu > "$R/lscpu.txt"
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 100 taskset -c 2,3 /tmp/s37b/bin/bench_cpu --varlen --dtype ${run%_*} --reps 13 \
      > "$R/cpu_$run.json" 2> "$R/cpu_$run.err"
    echo "cpu $run rc=$?"; grep -E "over_packed|loop" "$R/cpu_$run.json" | cut -c1-300 | head -6
  done
}
archived body
