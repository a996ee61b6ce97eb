# Session 35 call 2: is the 32x4096 decode's 10% of idle SM cycles (session 32 call 1: SM active
# 151.4k of 169.0k elapsed cycles, cuDNN 150.0k of 167.2k) a tail of blocks that finish early?
# ncu's per-SM spread of active cycles (min / max / avg, and per-SM instances) for our split
# kernel (main's pack) and cuDNN's kernel on the same row.
. lab/decode/check_ab.sh
M=sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_elapsed.max,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.per_cycle_active
body() {
  gpu_info
  unpack main
  (cd /tmp/main && timeout 120 ncu --metrics $M --print-metric-instances values -k regex:fattn_decode -s 10 -c 3 bin/bench \
    'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128' --bench --warm-up-time 0.1 --measurement-time 0.1 \
    --sample-size 10 --noplot > "$R/ncu_ours.txt" 2>&1; echo "ours rc=$?")
  timeout 120 ncu --metrics $M --print-metric-instances values -k 'regex:cudnn|fort|sdpa|flash' -c 3 \
    python3 "$L/lab/decode/sdpa_layout.py" --ncu 3 > "$R/ncu_cudnn.txt" 2>&1; echo "cudnn rc=$?"
  grep -E "fattn|cudnn|fort|flash|sm__|gpu__|dram__" "$R"/ncu_*.txt | cut -c1-400 | head -60
}
archived body
