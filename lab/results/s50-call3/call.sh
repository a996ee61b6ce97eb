# Session 50, call 3: main's default (pack s49f = ae4ce5b: K/V multicast on the strided
# d128 grids; kernels and glue unchanged since) on one machine: issue 14's table (torch run 1,
# ours, torch run 2), the PyTorch float64 oracle, then the whole GPU test binary with the time
# left. Session 49's call 5 ran the table on another H200 and its files were lost.
# PREDICTION: 13-17 of 19 rows at or above cuDNN in both runs (the count moves with the machine);
# the oracle and every GPU test pass.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49f
  table_runs s49f
  python3 "$L/lab/results/s28-call3/table.py" "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  python3 "$L/lab/results/s28-call3/table.py" "$R" --readme > "$R/table_readme.md" 2>&1
  echo "table done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/s49f
   timeout 80 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
   FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 80 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
   echo "oracle rc=$?"; grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | cut -c1-240 | head -5)
  echo "oracle done at $(( $(date +%s) - S0 )) s"
  left=$(( 565 - ($(date +%s) - S0) ))
  (cd /tmp/s49f && timeout $left bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > "$R/all.log" 2>&1; echo "all rc=$? (limit $left s)"
   grep -E "^test |^test result|FAILED|SKIPPED|panicked" "$R/all.log" | cut -c1-200 | head -60)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
