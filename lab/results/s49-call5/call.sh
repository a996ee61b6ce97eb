# Session 49, call 5: main with the K/V multicast on by default (CTA-scope remote arrival,
# call 4's a1, whose d128 SASS the default build's equals; every other fwd_sm90 entry's SASS
# equals session 48's), pack s49f. First the tests that reach the multicast path (the new
# gpu_hopper_multicast: 5 multicast grids, plain and wide d128, tails, GQA, head-major, padded
# dims; gpu_hopper_prefill; the sweeps; NaN; LSE), then issue 14's table (torch run 1, ours,
# torch run 2), then compute-sanitizer memcheck / racecheck / synccheck of gpu_hopper_multicast's
# first case with what time is left.
# PREDICTION: every test passes; the table's unmasked d128 rows 1-3% faster than session 48's
# (call 4: 2048 -1.4%, 4096 -1.3%, 16k -3.0% against no multicast), d128 2048 at or above
# cuDNN in both runs; the sanitizers clean.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49f
  (cd /tmp/s49f && cat COMMIT
   for t in gpu_hopper_multicast gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_lse gpu_varlen_matches_dense_per_sequence; do
     timeout 100 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases|SKIPPED" "$R/tests.log" | cut -c1-240 | head -40)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  table_runs s49f
  python3 "$L/lab/results/s28-call3/table.py" "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  echo "table done at $(( $(date +%s) - S0 )) s"
  for tool in memcheck synccheck racecheck; do
    left=$(( 440 - ($(date +%s) - S0) ))
    [ $left -lt 20 ] && { echo "$tool: not run (time)"; continue; }
    (cd /tmp/s49f && FUSED_ATTN_MULTICAST_CASES=1 timeout $left compute-sanitizer --tool $tool bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_$tool.log" | cut -c1-200 | tail -3)
  done
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
