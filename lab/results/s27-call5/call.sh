# Session 27 call 5: the final pack s27d's GPU test binary whole (every test, both kernel
# generations where a test runs both) and the PyTorch float64 oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s27d
  cd /tmp/s27d && head -1 COMMIT
  timeout 270 bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > "$R/all.log" 2>&1; echo "all rc=$?"
  grep -E "^test result|FAILED|SKIPPED|panicked|split over" "$R/all.log" | cut -c1-250 | head -20
  timeout 60 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
  FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 60 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1; echo "oracle rc=$?"
  grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | head -5
}
archived body
