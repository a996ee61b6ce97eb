# Session 47, call 5: issue 14's table on pack s47b (7ff9876: FastDiv naming + stmatrix
# staging; HEAD's kernels after the reverts of 370aca4 and bbd2fdb): torch run 1, ours, torch
# run 2 (python3 lab/results/s28-call3/table.py r); then the stamps of the same kernels (item 5's
# phases; device-pack/lab_stamps.xz from lab/results/s47-next/build.sh at 7ff9876), then the
# whole GPU test binary and the float64 oracle on the pack.
# PREDICTION: d128 2048 and d64 2048 causal at or above cuDNN in both torch runs (session 46:
# 0.993/0.984 and 0.986/0.987; calls 2-3: -1.1%); 4096 d128 and GQA about level (0.996-0.999);
# the stamps' set-up (16 -> 17) ~0.2 us (call 1: 0.54), normalize+stage ~0.45 us (0.59).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  table_runs s47b
  python3 lab/results/s28-call3/table.py "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  echo "table done at $(( $(date +%s) - S0 )) s"
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  timeout 60 /tmp/st/lab_stamps 16 16 16 2048 128 > "$R/stamps_2048.txt" 2>&1; echo "2048 rc=$?"
  timeout 60 /tmp/st/lab_stamps 4 32 32 4096 128 > "$R/stamps_4096.txt" 2>&1; echo "4096 rc=$?"
  python3 lab/results/s47-next/phases.py "$R/stamps_2048.txt" "$R/stamps_4096.txt"
  python3 lab/results/s46-call8/tiles.py "$R/stamps_2048.txt" "$R/stamps_4096.txt"
  gzip "$R"/stamps_*.txt
  left=$(( 320 - ($(date +%s) - S0) ))
  echo "gpu_all limit ${left}s"
  gpu_all s47b "$left"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
