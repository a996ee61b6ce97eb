# Session 42 call 1: pack s42a (faec9a4 + guessed GPU index values on candle's default device,
# src/cuda/speculation.rs; copies on a forked copy stream). The new test and its memcheck,
# the index ordering test, then the paged decode rows with FUSED_ATTN_INDEX_GUESS unset (copy
# stream) / stream (copies on candle's stream) / 0 (no guess: session 41's path), 2 rounds.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s42a
  (cd /tmp/s42a && head -3 COMMIT
   for t in gpu_device_indices_guess gpu_device_indices_wait_for_their_writer gpu_varlen_paged_decode; do
     timeout 90 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"; grep -E "^$t|panicked" "$R/t_$t.log" | tail -2 | cut -c1-250
   done
   timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_device_indices_guess --exact > "$R/san_guess.log" 2>&1; echo "memcheck guess rc=$?"; grep -E "SUMMARY|test result" "$R/san_guess.log" | tail -2
   F='cuda_paged_decode_bf16/(contiguous|paged(16|256)_(hostidx|devidx|devidx_steps32)_b)'
   for r in 1 2; do
     for cfg in copystream stream off; do
       case $cfg in copystream) unset FUSED_ATTN_INDEX_GUESS;; stream) export FUSED_ATTN_INDEX_GUESS=stream;; off) export FUSED_ATTN_INDEX_GUESS=0;; esac
       CRITERION_HOME=/tmp/crit-$cfg-$r timeout 100 bin/bench "$F" --bench --warm-up-time 0.5 --measurement-time 1.5 --sample-size 10 --noplot > "$R/bench_${cfg}_$r.log" 2>&1
       echo "bench $cfg $r rc=$?"; medians /tmp/crit-$cfg-$r | sed "s/^/cfg=$cfg round=$r /" | tee -a "$R/medians.txt"
     done
   done
   unset FUSED_ATTN_INDEX_GUESS)
}
archived body
