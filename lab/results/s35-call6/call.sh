# Session 35 call 6: the wide d128 instance (176-key blocks) at 2048 and 4096 keys today, where
# its last block is 112 / 48 of 176 keys (3.1% padding; session 24: 1.0-2.3% slower than the
# 128-key blocks). If it is now within ~1%, a last block whose Q·Kᵀ and P·V run only its whole
# 16-key steps (n112 / k-steps 7) would make it a win. Main's pack, FUSED_ATTN_SM90_WIDE_PADDING
# 1.04 against the rule, 2 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  envab main 'cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048|4_h32_kv32_q4096_k4096|4_h32_kv4_q4096_k4096)_d128$' 2 \
    FUSED_ATTN_SM90_WIDE_PADDING "rule=unset wide=1.04"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
