# Session 54, call 5: does the timing window favour one side? Torch's do_bench (bench_torch.py
# --rep-ms 100: 50 ms warm-up, 100 ms of reps) measures each row within ~150 ms of load; our
# criterion bench after 1 s of warm-up over 2 s. Under the 700 W cap a longer sustained load
# could run at a lower SM clock. Call 4's ncu (clocks free, 3 launches, no sustained load):
# causal d64 2048 ours 339.7-341.9 µs against cuDNN's 347.8-349.5, while the tables had ours
# 357.5-359.7 and cuDNN 349.0-365.5 under the benches. Rows: causal d64 2048, unmasked d128
# 2048, the 32x4096 decode. Configs, 2 rounds alternating: ours long (criterion --warm-up-time
# 1 --measurement-time 2, the table's), ours short (0.05 / 0.1 s), torch rep 100 ms (the
# table's), torch rep 2000 ms; nvidia-smi samples SM clock, power and temperature every 100 ms.
# PREDICTION: the short windows run 0-3% faster on the prefill rows on both sides (higher
# clock), the decode level; the ratio ours/cuDNN at equal windows within ±1% of the table's.
. lab/decode/check_ab.sh
P=s54a
ROWS='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d64_causal|b16_h16_kv16_q2048_k2048_d128|b32_h32_kv8_q1_k4096_d128)$'
ours() {  # LABEL ROUND WARM MEAS
  (cd /tmp/$P && CRITERION_HOME=/tmp/crit-$1-$2 timeout 100 bin/bench "$ROWS" --bench --warm-up-time $3 \
    --measurement-time $4 --sample-size 10 --noplot > /tmp/b_$1_$2.log 2>&1)
  medians /tmp/crit-$1-$2 | sed "s/^/cfg=$1 round=$2 /" | tee -a "$R/cfg_medians.txt"
}
torchw() {  # LABEL ROUND REP_MS
  mkdir -p "$R/$1_$2"
  timeout 120 python3 "$L/scripts/bench_torch.py" --out "$R/$1_$2" --rep-ms $3 --rows 3,4,17 --no-matmul > "$R/$1_$2.log" 2>&1
  echo "cfg=$1 round=$2 rc=$?"; grep -E "^\| (prefill|decode)" "$R/$1_$2/bench_torch.md" | cut -d'|' -f2-8
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 > "$R/smi.csv" &
  SMI=$!
  for r in 1 2; do
    if [ $r = 1 ]; then
      echo "t=$(( $(date +%s) - S0 )) ours_long $r" >> "$R/marks.txt"; ours long $r 1 2
      echo "t=$(( $(date +%s) - S0 )) ours_short $r" >> "$R/marks.txt"; ours short $r 0.05 0.1
      echo "t=$(( $(date +%s) - S0 )) torch100 $r" >> "$R/marks.txt"; torchw torch100 $r 100
      echo "t=$(( $(date +%s) - S0 )) torch2000 $r" >> "$R/marks.txt"; torchw torch2000 $r 2000
    else
      echo "t=$(( $(date +%s) - S0 )) torch2000 $r" >> "$R/marks.txt"; torchw torch2000 $r 2000
      echo "t=$(( $(date +%s) - S0 )) torch100 $r" >> "$R/marks.txt"; torchw torch100 $r 100
      echo "t=$(( $(date +%s) - S0 )) ours_short $r" >> "$R/marks.txt"; ours short $r 0.05 0.1
      echo "t=$(( $(date +%s) - S0 )) ours_long $r" >> "$R/marks.txt"; ours long $r 1 2
    fi
  done
  kill $SMI
  echo "$(date -u +%H:%M:%S) start $S0" >> "$R/marks.txt"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
