# Session 40, call 2: do the decode's warps finishing apart make the 32x4096 row's tail?
# Call 1 (ncu, base clocks): ours 130.2-130.7 us against cuDNN 128.5-129.5, the same DRAM
# sectors; SM active cycles max/avg 1.084 (ours) against 1.055 (cuDNN), and cuDNN's warps wait
# on block barriers (stall_barrier 1.4 per issue) where ours free-run (0.05).
# Prediction: a block barrier every tile (s40L1) or every 4 tiles (s40L4) of the rounds every
# warp has brings max/avg toward cuDNN's and the 32x4096 row -0.5 to -2%; 8x8192 (8 splits)
# and 2048 even or better.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|8_h32_kv8_q1_k8192|1_h32_kv8_q1_k2048)_d128$' 3 s39b s40L1 s40L4
  sort -k3 "$R/ab_medians.txt"
  M=sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,gpu__time_duration.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  for t in s39b s40L1 s40L4; do
    (cd /tmp/$t && timeout 60 ncu --metrics "$M" --csv -k regex:fattn_decode --launch-skip 20 --launch-count 2 \
      bin/bench 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$' --bench --noplot --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 \
      > "$R/ncu_$t.csv" 2>&1; echo "ncu $t rc=$?"; grep -E "cycles_active|duration|stalled" "$R/ncu_$t.csv" | awk -F'","' '{print $(NF-3), $NF}')
  done
}
archived body
