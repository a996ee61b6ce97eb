# Session 32 call 1: session 31's prepared decode profile (lab/results/s32-next/call.sh, removed
# once this call superseded it: ncu
# --set full of the (32,32,8,1,4096,128) decode row, ours in bhsd and bshd against cuDNN), plus
# plan item 2: ncu --set full with per-instruction SASS counters of the d64 2048 prefill, causal
# and not (pack s32a = main 0192e12's kernels).
. lab/decode/check_ab.sh
. lab/decode/prof.sh
body() {
  gpu_info
  unpack s32a
  (cd /tmp/s32a && prof ours32 fattn_decode 40 'bhsd_b32_h32_kv8_q1_k4096_d128$')
  (cd /tmp/s32a && prof ours32s fattn_decode 40 'bshd_b32_h32_kv8_q1_k4096_d128$')
  prof_torch cudnn32 'cudnn|fort|sdpa' 3
  python3 "$L/lab/decode/sass_stalls.py" "$R/sass_ours32.csv" > "$R/stalls_ours32.txt" 2>&1; head -40 "$R/stalls_ours32.txt"
  for f in "$R"/details_*.txt; do echo "== $f"; grep -E "Stall|Warp Cycles Per|sectors|Sectors|Requests|L2 Hit|DRAM Through" "$f" | head -30; done
  # d64 2048: the untimed calls of the small rows (none, causal) and of 2048 none come first.
  (cd /tmp/s32a && prof d64c 'fattn_fwd_bf16_d64' 3 'b16_h16_kv16_q2048_k2048_d64_causal$' cuda_fused_attn_bf16)
  (cd /tmp/s32a && prof d64n 'fattn_fwd_bf16_d64' 2 'b16_h16_kv16_q2048_k2048_d64$' cuda_fused_attn_bf16)
  grep -E "Function Name|Kernel Name|fattn" "$R/details_d64c.txt" "$R/details_d64n.txt" | head -6
  python3 "$L/lab/decode/sass_stalls.py" "$R/sass_d64c.csv" > "$R/stalls_d64c.txt" 2>&1; head -30 "$R/stalls_d64c.txt"
  cd "$L"
}
archived body
