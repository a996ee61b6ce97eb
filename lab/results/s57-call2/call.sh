# Session 57, call 2, on an H100 (pack s57a, HEAD 7748cf7). Call 1 on another H100: the table
# with ours between torch runs 1 and 2 had 15 of 19 rows at or above cuDNN, the one between
# torch runs 2 and 3 had 19 of 19. cuDNN's unmasked d128 rows were 1-3% faster in torch's first
# run (2048: 915.0 / 932.0 / 948.5 us in runs 1 / 2 / 3) than later: torch's first run is the
# first load on a cold GPU, which under the 700 W cap clocks higher (less leakage at a lower
# temperature). Here: a warm-up run of torch (discarded), then torch 1, ours 1, torch 2, ours 2,
# torch 3, ours 3, torch 4: three tables, each ours between two torch runs, with the GPU's
# temperature, power and SM clock sampled every 0.5 s throughout (smi.csv).
# PREDICTION: with the GPU warm, no torch run is systematically faster; each table 18-19 of 19
# rows at or above cuDNN in both its torch runs; the rows nearest 1.0: d128 2048 / 4k / 16k
# unmasked (1.00-1.02) and the 32x4096 decode (1.00 +- 0.005). Temperature rises through the
# warm-up and is within a few degrees over the rest.
. lab/decode/check_ab.sh
P=s57a
ours_run() {  # K
  CRITERION_HOME=/tmp/crit-ours$1 timeout 220 "/tmp/$P/bin/bench" cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench$1.log" 2>&1
  echo "ours$1 rc=$?"; medians /tmp/crit-ours$1 > "$R/medians$1.txt"
}
mark() { echo "$1 $(date +%s.%N)" >> "$R/marks.txt"; }
body() {
  S0=$(date +%s)
  gpu_info; unpack $P; head -1 /tmp/$P/COMMIT
  nvidia-smi --query-gpu=timestamp,temperature.gpu,power.draw,clocks.sm,clocks.mem,clocks_throttle_reasons.active --format=csv -lms 500 > "$R/smi.csv" 2>&1 &
  SMI=$!
  mark warmup; torch_both 0
  for k in 1 2 3; do
    mark torch$k; torch_both $k
    mark ours$k; ours_run $k
    echo "run $k done at $(( $(date +%s) - S0 )) s"
  done
  mark torch4; torch_both 4; mark end
  kill $SMI
  for k in 1 2 3; do
    mkdir -p "$R/t$k"; cp -r "$R/torch$k" "$R/t$k/torch1"; cp -r "$R/torch$((k+1))" "$R/t$k/torch2"; cp "$R/medians$k.txt" "$R/t$k/medians.txt"
    python3 "$L/lab/results/s28-call3/table.py" "$R/t$k" > "$R/t$k/table.md" 2>&1
    python3 "$L/lab/results/s28-call3/table.py" "$R/t$k" --readme > "$R/t$k/table_readme.md" 2>&1
    echo "== table $k (torch $k, ours $k, torch $((k+1)))"; cat "$R/t$k/table.md"
  done
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
