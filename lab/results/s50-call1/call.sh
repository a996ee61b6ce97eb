# Session 50, call 1: call 5 of session 49 found 4 racecheck hazards (4 errors) on the first
# case of gpu_hopper_multicast with K/V multicast on by default (pack s49f = ae4ce5b); its
# logs were lost with that session. Here: racecheck of that case with every hazard printed, and
# the same case with the multicast rule left out (FUSED_ATTN_SM90_TILE_RULES without
# `multicast`) as the control; then the tests call 5 ran (their log was lost too), then
# racecheck of the other four multicast cases with what time is left.
# PREDICTION: the hazards come back with multicast and vanish without it; their PCs say
# whether they are the peer's multicast writes against this CTA's reads (a cross-CTA order that
# racecheck may not model) or a real hazard.
. lab/decode/check_ab.sh
RULES_NO_MC=dynamic,lightest-last,pairs,persistent,shift,small-grid,streamk,tail,wide
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49f
  compute-sanitizer --version | tail -1
  compute-sanitizer --help | grep -iE -A1 "racecheck" > "$R/racecheck_help.txt"
  (cd /tmp/s49f && cat COMMIT
   FUSED_ATTN_MULTICAST_CASES=1 timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 200 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race_mc.log" 2>&1
   echo "racecheck mc rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_race_mc.log" | cut -c1-200 | tail -3
   grep -E -A4 "Race reported|Error|Warning" "$R/san_race_mc.log" | cut -c1-260 | head -60
   FUSED_ATTN_SM90_TILE_RULES=$RULES_NO_MC FUSED_ATTN_MULTICAST_CASES=1 timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 200 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race_nomc.log" 2>&1
   echo "racecheck no-mc rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_race_nomc.log" | cut -c1-200 | tail -3
   grep -E -A4 "Race reported|Error" "$R/san_race_nomc.log" | cut -c1-260 | head -20)
  echo "racecheck done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/s49f
   for t in gpu_hopper_multicast gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_lse gpu_varlen_matches_dense_per_sequence; do
     timeout 100 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases" "$R/tests.log" | cut -c1-240 | head -40)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  left=$(( 540 - ($(date +%s) - S0) ))
  if [ $left -gt 30 ]; then
    (cd /tmp/s49f && timeout $left compute-sanitizer --tool racecheck bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race_all.log" 2>&1
     echo "racecheck all 5 rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_race_all.log" | cut -c1-200 | tail -3)
  fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
