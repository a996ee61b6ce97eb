# Session 58, call 1, on an H200 (nvidia-h200 is the only kind lent today; session 57's H100
# calls are lab/results/s57-call*). Pack s58a: HEAD 99ed938, the same kernels as s57a (7748cf7).
# Session 57 call 2 (H100, results lost with that session; figures in the lab README): three
# tables, each ours between two torch runs, 17 / 17 / 17 of 19 rows; every short row was at or
# above cuDNN against the table's other torch run, and cuDNN's own time moved up to 7% from one
# torch run to the next. One table of two torch runs therefore decides the near rows by where
# cuDNN's run landed. This call: a warm-up torch run (discarded), then torch 1, ours 1, torch 2,
# ours 2, torch 3, ours 3, torch 4, with the GPU sampled every 0.5 s (smi.csv), then the cold start.
# VERDICT, fixed before the call: each row's median of ours over its 3 runs against the median of
# cuDNN over its 4 runs (pooled.py), with the 6 per-table ratios' range beside it; the three
# single tables (table.py) are reported too.
# PREDICTION: pooled 18-19 of 19 (the 32x4096 decode 1.000 +- 0.005; d128 2048 unmasked
# 1.00-1.03); the single tables 16-19 of 19 each; cold start within 0.02 s of warm for the
# prefill, decode and backward.
. lab/decode/check_ab.sh
P=s58a
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
    echo "== table $k (torch $k, ours $k, torch $((k+1)))"; tail -3 "$R/t$k/table.md"
  done
  python3 "$L/lab/results/s58-call1/pooled.py" "$R" 3 > "$R/pooled.md" 2>&1; cat "$R/pooled.md"
  coldstart_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
