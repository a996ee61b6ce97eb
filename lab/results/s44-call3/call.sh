# Session 44 call 3: (1) why the 4-stage ring lost 2 µs on the 2048 decode (call 2): ncu of the
# split kernel and the combine, pack s44b, FUSED_ATTN_DECODE_STAGES=3 against =4 (durations,
# SM active cycles, the shared-memory carveout each launch ran with). Prediction: the split
# kernel itself ~2 µs longer at 4 stages (the loss is inside it, not in the combine's overlap).
# (2) the small prefill rows and the 2048 decode on the sm_80 kernels (FUSED_ATTN_CUDA_KERNELS=
# sm80: mma.sync prefill, in-kernel decode merge) against the default, pack s44a, 2 rounds.
# Prediction: the small rows slower on sm80 (session 7's v1-v3 were faster than it at 2048).
. lab/decode/check_ab.sh
SMALL='cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64|b1_h32_kv8_q1_k2048_d128$)'
body() {
  gpu_info
  unpack s44a; unpack s44b
  M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,launch__shared_mem_config_size,launch__grid_size,launch__occupancy_limit_shared_mem,dram__throughput.avg.pct_of_peak_sustained_elapsed
  for st in 3 4; do
    (cd /tmp/s44b && FUSED_ATTN_DECODE_STAGES=$st timeout 90 ncu --metrics $M -k regex:fattn_decode -s 20 -c 12 \
      bin/bench "$ROW_2048" --bench --warm-up-time 0.2 --measurement-time 0.3 --sample-size 10 --noplot > "$R/ncu_st$st.txt" 2>&1)
    echo "ncu stages $st rc=$?"
    python3 - "$R/ncu_st$st.txt" $st <<'PY'
import re, sys, collections, statistics
cur = None; d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    m = re.match(r"\s+(fattn_decode\w+)", l)
    if m: cur = m[1]; continue
    m = re.match(r"\s+(\S+)\s+(\S+)?\s+([\d,.]+)$", l)
    if cur and m: d[(cur, m[1])].append(float(m[3].replace(",", "")))
for (k, met), v in sorted(d.items()): print("stages", sys.argv[2], k, met, len(v), "median", statistics.median(v))
PY
  done
  for r in 1 2; do
    for k in $( ((r == 1)) && echo "auto sm80" || echo "sm80 auto"); do
      if [ $k = sm80 ]; then export FUSED_ATTN_CUDA_KERNELS=sm80; else unset FUSED_ATTN_CUDA_KERNELS; fi
      (cd /tmp/s44a && CRITERION_HOME=/tmp/crit-$k-$r timeout 100 bin/bench "$SMALL" --bench --warm-up-time 1 \
        --measurement-time 2 --sample-size 10 --noplot > /tmp/k_$k_$r.log 2>&1)
      medians /tmp/crit-$k-$r | sed "s/^/kernels=$k round=$r /" | tee -a "$R/kernels_medians.txt"
    done
  done
  unset FUSED_ATTN_CUDA_KERNELS
}
archived body
