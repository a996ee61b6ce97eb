# Session 46, call 6: where the prefill rows that move across 1.0 stand on clocks and power,
# and the tensor pipe in ncu. Session 30 measured one row (d128 2048) at the 700 W cap: ours
# 1740-1755 MHz, cuDNN 1665-1710, ~6% more cycles for ours. Here, for every row short in
# session 45's or 46's tables plus two controls, ours (the crate's bench, pack s46a, 3 s) then
# cuDNN (torch, 3 s of do_bench), nvidia-smi every 50 ms (clock, power, throttle reasons);
# then ncu of the d128 2048 row, ours and cuDNN: tensor-pipe and issue metrics.
# PREDICTION: every prefill row runs at the power cap on both sides, ours at a 2-4% higher
# clock; the decode row runs unthrottled at 1980 MHz.
. lab/decode/check_ab.sh
H=lab/results/s46-call6
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> "$R/marks.txt"; }
body() {
  gpu_info
  unpack s46a
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$R/clocks.csv" 2> "$R/smi.err" &
  MON=$!
  sleep 1
  if ! kill -0 $MON 2>/dev/null; then  # the field name differs on this driver: without it
    cat "$R/smi.err"
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 50 > "$R/clocks.csv" &
    MON=$!
  fi
  for row in "16 16 16 2048 2048 64 1 b16_h16_kv16_q2048_k2048_d64_causal" "16 16 16 2048 2048 128 0 b16_h16_kv16_q2048_k2048_d128" \
             "4 32 32 4096 4096 128 0 b4_h32_kv32_q4096_k4096_d128" "4 32 4 4096 4096 128 0 b4_h32_kv4_q4096_k4096_d128" \
             "1 32 32 16384 16384 128 0 b1_h32_kv32_q16384_k16384_d128" "16 16 16 2048 2048 256 0 b16_h16_kv16_q2048_k2048_d256" \
             "4 32 32 4096 4096 128 1 b4_h32_kv32_q4096_k4096_d128_causal" "32 32 8 1 4096 128 0 b32_h32_kv8_q1_k4096_d128"; do
    set -- $row; name=$8
    mark start "ours $name"
    (cd /tmp/s46a && timeout 60 bin/bench "cuda_fused_attn_bf16/$name\$" --bench --warm-up-time 1 --measurement-time 3 --sample-size 10 --noplot > "$R/ours_$name.log" 2>&1)
    mark end "ours $name"
    mark start "cudnn $name"
    timeout 60 python3 $H/cudnn_row.py $1 $2 $3 $4 $5 $6 $7 3 >> "$R/cudnn.log" 2>&1
    mark end "cudnn $name"
    grep -E "time:" "$R/ours_$name.log" | head -1; tail -1 "$R/cudnn.log"
  done
  kill $MON
  python3 $H/clocks.py "$R"
  ncu --query-metrics --chip gh100 2>/dev/null | grep -oE "^sm__(pipe_tensor|inst_executed_pipe_tensor)[A-Za-z0-9_]*" | sort -u > "$R/tensor_metrics.txt"
  cat "$R/tensor_metrics.txt"
  TM=$(grep -E "gmma|hmma" "$R/tensor_metrics.txt" | grep cycles_active | head -3 | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd,)
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active${TM:+,$TM}"
  echo "metrics $M"
  (cd /tmp/s46a && timeout 100 ncu --clock-control none --metrics "$M" --kernel-name regex:fattn_fwd --launch-skip 5 --launch-count 2 \
     bin/bench 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128$' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_ours.txt" 2>&1)
  echo "== ncu ours"; grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|smsp__|ERR" "$R/ncu_ours.txt" | head -24
  timeout 100 ncu --clock-control none --metrics "$M" --kernel-name regex:"fprop|flash|cudnn" --launch-skip 5 --launch-count 2 \
     python3 $H/cudnn_row.py 16 16 16 2048 2048 128 0 0.2 > "$R/ncu_cudnn.txt" 2>&1
  echo "== ncu cudnn"; grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|smsp__|ERR" "$R/ncu_cudnn.txt" | head -24
}
archived body
