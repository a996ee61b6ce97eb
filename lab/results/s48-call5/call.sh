# Session 48, call 5: issue 14's table on main's kernels (745e27b = pack s48m: the per-tile mask
# span and the producer's wait hint), then racecheck of gpu_sanitizer_subset on them (call 4
# ran it with too short a limit: ~250 s under racecheck).
# PREDICTION: d128 2048 at ~1.00x cuDNN (0.997 / 0.996 in session 47's call 5, -0.5% since),
# the d64 and 4096 rows 1-1.5% further above; the 32x4096 decode unchanged (0.99: its kernel,
# decode_sm80, did not change). Racecheck: 0 hazards.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  table_runs s48m
  python3 lab/results/s28-call3/table.py "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  echo "table done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/s48m && timeout 300 compute-sanitizer --tool racecheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_racecheck.log" | tail -3)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
