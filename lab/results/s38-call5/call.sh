# Session 38 call 5: racecheck and synccheck of the sanitizer subset on main after the
# into-merge (pack s38b = 2e6e32a; call 2 ran its memcheck), then the into-test's racecheck.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s38b "racecheck synccheck"
  (cd /tmp/s38b && FUSED_ATTN_INTO_CASES=12 timeout 150 compute-sanitizer --tool racecheck bin/gpu gpu_varlen_into --exact --nocapture > "$R/san_into_race.log" 2>&1
   echo "racecheck into rc=$?"; grep -E "SUMMARY|test result|gpu_varlen_into:" "$R/san_into_race.log" | tail -3)
}
archived body
