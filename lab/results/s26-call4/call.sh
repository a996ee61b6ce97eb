# Session 26 call 4: HEAD's GPU test binary whole (every test, both kernel generations where a
# test runs both) and the PyTorch float64 oracle on pack s26m (HEAD's build), then synccheck
# and racecheck of the sanitizer subset. Not run on the H200 since session 24.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s26m
  cd /tmp/s26m && head -3 COMMIT
  timeout 270 bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > "$R/all.log" 2>&1; echo "all rc=$?"
  grep -E "^test result|FAILED|SKIPPED|panicked" "$R/all.log" | head -20
  timeout 90 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
  FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 90 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1; echo "oracle rc=$?"
  grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | head -5
  for tool in synccheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
    echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
  done
}
archived body
