# Session 58, call 4: call 1 again (pack s58a), on a fresh machine (the lease was given back after
# call 3), to see whether call 1's pooled verdict holds on another H200.
# Call 1 (GPU-471c9717): pooled 19 of 19 (nearest: the 32x4096 decode 1.002, 8x8192 decode 1.008,
# causal d64 2048 1.018); single tables 18 / 18 / 18 of 19.
# PREDICTION: pooled 18-19 of 19, the 32x4096 decode the one at risk (0.995-1.008); single
# tables 16-19 each; cold start within 0.02 s of warm.
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
