# Session 42 call 2: pack s42b (call 1's guess, now also right after a wrong guess, at most two
# wrong guesses in a row). The guess test, its memcheck, the index ordering test under memcheck,
# memcheck / racecheck / synccheck of the sanitizer subset, then the paged decode rows
# (contiguous, hostidx, devidx, devidx_steps32), 2 rounds.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s42b "memcheck racecheck synccheck" gpu_device_indices_guess gpu_device_indices_wait_for_their_writer
  (cd /tmp/s42b
   for t in gpu_device_indices_guess gpu_device_indices_wait_for_their_writer; do
     timeout 60 compute-sanitizer --tool memcheck bin/gpu $t --exact > "$R/san_$t.log" 2>&1; echo "memcheck $t rc=$?"; grep -E "SUMMARY|test result" "$R/san_$t.log" | tail -2
   done
   F='cuda_paged_decode_bf16/(contiguous|paged(16|256)_(hostidx|devidx|devidx_steps32)_b)'
   for r in 1 2; do
     CRITERION_HOME=/tmp/crit-$r timeout 100 bin/bench "$F" --bench --warm-up-time 0.5 --measurement-time 1.5 --sample-size 10 --noplot > "$R/bench_$r.log" 2>&1
     echo "bench $r rc=$?"; medians /tmp/crit-$r | sed "s/^/round=$r /" | tee -a "$R/medians.txt"
   done)
}
archived body
