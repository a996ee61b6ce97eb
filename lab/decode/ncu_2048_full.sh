#!/usr/bin/env bash
# ncu --set full of one launch of ours and of cuDNN's split kernel on (1,32,8,1,2048,128).
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
R="$OUT/ncu2048full"; mkdir -p "$R"
cd /tmp/h90 || exit 1
timeout 150 ncu --set full --import-source yes --kernel-name regex:fattn_decode --launch-skip 3 --launch-count 1 -o "$R/ours" \
  bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.2 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ours.log" 2>&1
ncu --import "$R/ours.ncu-rep" --print-details all > "$R/ours_details.txt" 2>&1
ncu --import "$R/ours.ncu-rep" --page source --csv --print-source sass > "$R/ours_sass.csv" 2>&1
timeout 150 ncu --set full --kernel-name regex:"sdpa|lean_reduction" --launch-skip 2 --launch-count 2 -o "$R/cudnn" python3 "$LAB/sdpa2048.py" > "$R/cudnn.log" 2>&1
ncu --import "$R/cudnn.ncu-rep" --print-details all > "$R/cudnn_details.txt" 2>&1
for f in ours cudnn; do grep -E "Duration|Elapsed Cycles|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|L2 Hit" "$R/${f}_details.txt" | head -30; echo ----; done
xz -9 "$R"/*.ncu-rep "$R/ours_sass.csv"
