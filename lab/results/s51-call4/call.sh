# Session 51, call 4 (the session's last ~360 s of device time): racecheck of
# gpu_hopper_multicast with the naive reference on the CPU (FUSED_ATTN_NAIVE_ON_CPU=1, pack
# s51c = 5cd3444, kernels as s51b), unfiltered (the kns=fattn filter stops on the sanitizer's
# internal error), so that every hazard it reports is in our kernels or candle's.
# PREDICTION: 0 hazards; the test passes.
. lab/decode/check_ab.sh
P=s51c
body() {
  S0=$(date +%s)
  unpack $P
  (cd /tmp/$P && head -1 COMMIT
   FUSED_ATTN_NAIVE_ON_CPU=1 timeout 175 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result|cases|panicked" "$R/san_race.log" | cut -c1-240 | tail -4
   echo "hazard accesses by kernel:"; grep -oE "(Read|Write) Thread \([0-9,]+\) at [A-Za-z0-9_]+" "$R/san_race.log" | awk '{print $NF}' | sort | uniq -c | head -20)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
