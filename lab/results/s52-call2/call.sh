# Session 52, call 2: the sanitizers on main's HEAD (pack s52a): scripts/device-run.sh's
# sanitize stage (memcheck and racecheck of gpu_sanitizer_subset, then of gpu_hopper_multicast
# with its naive reference on the CPU: session 51's 3c2dc5e, not yet run through the script),
# then synccheck of both (the subset unfiltered; the multicast test --kernel-name kns=fattn,
# session 51 call 3) with the time left.
# PREDICTION: every sanitizer run 0 errors / 0 hazards; the stage PASS in ~350 s.
. lab/decode/check_ab.sh
P=s52a
body() {
  S0=$(date +%s)
  gpu_info
  DEVICE_RUN_WORK=/tmp/dr bash scripts/device-run.sh "$L/device-pack/h90-$P-9.tar.xz" "$R/dr" sanitize > "$R/sanitize_run.log" 2>&1
  echo "sanitize stage rc=$?"; grep -E "^== " "$R/sanitize_run.log" | cut -c1-250
  echo "sanitize done at $(( $(date +%s) - S0 )) s"
  unpack $P
  (cd /tmp/$P
   left=$(( 430 - ($(date +%s) - S0) )); [ $left -gt 120 ] && left=120
   if [ $left -gt 30 ]; then
     timeout $left compute-sanitizer --tool synccheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_sync_subset.log" 2>&1
     echo "synccheck subset rc=$? (limit $left s)"; grep -E "SUMMARY|test result" "$R/san_sync_subset.log" | cut -c1-200 | tail -2
   fi
   left=$(( 540 - ($(date +%s) - S0) ))
   if [ $left -gt 30 ]; then
     FUSED_ATTN_NAIVE_ON_CPU=1 timeout $left compute-sanitizer --tool synccheck --error-exitcode 97 --kernel-name kns=fattn bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_sync_mc.log" 2>&1
     echo "synccheck multicast rc=$? (limit $left s)"; grep -E "SUMMARY|test result" "$R/san_sync_mc.log" | cut -c1-200 | tail -2
   fi)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
