# Session 35 call 3: the 32x4096 decode's blocks end unevenly (call 2: per-SM active cycles
# 124k-165k, average 152k, of 169k elapsed; cuDNN 129k-161k of 166k). Do more, smaller split
# blocks (the hardware hands each free slot the next block) end more evenly than they cost in
# partials and the combine launch? Main's pack, FUSED_ATTN_DECODE_SPLITS 1 (the rule), 4, 8,
# 16, on the 32x4096 and 8x8192 rows (the rule gives 1 and 4), 2 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  envab main 'cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|8_h32_kv8_q1_k8192)_d128' 2 FUSED_ATTN_DECODE_SPLITS \
    "rule=unset s4=4 s8=8 s16=16 s32=32"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
