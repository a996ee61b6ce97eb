#!/usr/bin/env bash
# ncu kernel durations of the (1,32,8,1,2048,128) decode row: ours (bench binary of a lab pack,
# already extracted in /tmp/h90) and torch SDPA's cuDNN and FA2 back ends at the same shape.
# Clocks free (--clock-control none), caches flushed before each launch (ncu's default).
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
R="$OUT/ncu2048"; mkdir -p "$R"
cd /tmp/h90 || exit 1
# The bench makes one untimed call per row in table order before its filter: decode rows
# 8192 and 32768 launch first.
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  --kernel-name regex:fattn_decode --launch-skip 2 --launch-count 5 \
  bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.2 --measurement-time 0.5 --sample-size 10 --noplot \
  > "$R/ours.txt" 2>&1
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  python3 "$LAB/sdpa2048.py" > "$R/torch.txt" 2>&1
grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration|dram__bytes" "$R/ours.txt" | head -20
grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration|dram__bytes|backend done" "$R/torch.txt" | head -60
