# Session 39 call 6: the separate combine launch (compute capability 9.0's default since session
# 22) against the split kernel's own last-block merge, re-measured on today's lean decode
# (pack s39b): the split decode rows under FUSED_ATTN_CUDA_KERNELS unset (auto: sm_90 combine
# launch) and sm80 (the decode kernel is the same compute_80 code either way; sm80 sets no
# defer_combine), 4 rounds alternating; then the 2048 row by split count under both.
# Prediction: the 2048 row (0.970 / 0.993 of cuDNN in call 3) loses or ties with the in-kernel
# merge (session 22 chose the launch at 0.91 -> 0.95); recorded for the plan either way.
. lab/decode/check_ab.sh
body() {
  gpu_info
  envab s39b 'cuda_fused_attn_bf16/b(1|8)_h32_kv8_q[14]_k' 4 FUSED_ATTN_CUDA_KERNELS "auto=unset sm80=sm80"
  for s in 4 6 8 12; do
    FUSED_ATTN_DECODE_SPLITS=$s envab s39b 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$' 2 FUSED_ATTN_CUDA_KERNELS "auto$s=unset sm80s$s=sm80"
  done
}
archived body
