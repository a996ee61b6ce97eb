# Session 52, call 3: racecheck of gpu_sanitizer_ (the subset and its varlen parts) through
# device-run.sh's sanitize stage with the racecheck limit raised to 300 s (call 2: it ran past
# the 150 s limit with no hazard printed), SANITIZE_FILTER set so that only the subset runs
# (call 2 passed the multicast runs); memcheck again with it (7 s).
# PREDICTION: racecheck completes in 160-200 s with 0 hazards; memcheck 0 errors.
. lab/decode/check_ab.sh
P=s52a
body() {
  S0=$(date +%s)
  gpu_info
  # The pack's own device-run.sh predates LIMIT_RACECHECK: run the checkout's.
  SANITIZE_FILTER=gpu_sanitizer_ DEVICE_RUN_WORK=/tmp/dr bash scripts/device-run.sh "$L/device-pack/h90-$P-9.tar.xz" "$R/dr" sanitize > "$R/sanitize_run.log" 2>&1
  echo "sanitize stage rc=$?"; grep -E "^== " "$R/sanitize_run.log" | cut -c1-250
  grep -E "^test result|SUMMARY|exit .* after" "$R/dr/sanitize.log" | cut -c1-200
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
