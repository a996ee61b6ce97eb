# Session 51, call 3: pack s51b (db7c5fd: K-only multicast on the plain d128 instance, and
# the wide d128 instance back to the 2% padding bound at every length, so the 4096-key rows
# run the plain instance). The Hopper tests (gpu_hopper_multicast with its long-key wide case
# now 4224 keys, gpu_hopper_prefill, the bf16 sweep, poison), issue 14's table, then racecheck
# and synccheck of gpu_hopper_multicast restricted to our kernels (--kernel-name kns=fattn:
# call 2's unfiltered racecheck printed only cuBLAS nvjet hazards, 400 of 184 996, and its
# synccheck ran past 150 s).
# PREDICTION: tests pass; table as call 1 with the unmasked 4096 rows 0.5-1% faster (plain);
# racecheck and synccheck: 0 hazards / errors in fattn kernels.
. lab/decode/check_ab.sh
P=s51b
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  pack_tests $P gpu_hopper_multicast gpu_hopper_prefill gpu_sweep_bf16 gpu_output_poisoned
  echo "tests done at $(( $(date +%s) - S0 )) s"
  table_runs $P
  table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P
   left=$(( 430 - ($(date +%s) - S0) )); [ $left -gt 150 ] && left=150
   timeout $left compute-sanitizer --tool racecheck --kernel-name kns=fattn bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_race.log" | cut -c1-200 | tail -3
   echo "racecheck done at $(( $(date +%s) - S0 )) s"
   left=$(( 470 - ($(date +%s) - S0) ))
   if [ $left -gt 30 ]; then
     timeout $left compute-sanitizer --tool synccheck --kernel-name kns=fattn bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_sync.log" 2>&1
     echo "synccheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_sync.log" | cut -c1-200 | tail -3
   fi)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
