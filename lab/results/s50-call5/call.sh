# Session 50, call 5: pack s50w (main with the wide d128 instance from 4096 keys on, up to 4%
# of padding; kernels unchanged since s49f). The tests that reach it (gpu_hopper_multicast
# with its new 4096-key case that must run on the wide instance, gpu_hopper_prefill, sweeps,
# NaN, poison), then issue 14's table (torch run 1, ours, torch run 2), then memcheck of the
# 4096-key multicast case with what time is left.
# PREDICTION: every test passes; the two unmasked 4096 rows 1-1.5% faster than call 3's
# (1889.0 and 1872.3 µs), the others as call 3 (machine to machine ±1%).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s50w
  (cd /tmp/s50w && cat COMMIT
   for t in gpu_hopper_multicast gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_output_poisoned; do
     timeout 100 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases" "$R/tests.log" | cut -c1-240 | head -40)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  table_runs s50w
  python3 "$L/lab/results/s28-call3/table.py" "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  python3 "$L/lab/results/s28-call3/table.py" "$R" --readme > "$R/table_readme.md" 2>&1
  echo "table done at $(( $(date +%s) - S0 )) s"
  left=$(( 400 - ($(date +%s) - S0) ))
  if [ $left -gt 30 ]; then
    (cd /tmp/s50w && timeout $left compute-sanitizer --tool memcheck bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_memcheck.log" 2>&1
     echo "memcheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_memcheck.log" | cut -c1-200 | tail -3)
  fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
