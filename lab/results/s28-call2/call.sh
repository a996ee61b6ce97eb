# Session 28 call 2 (pack s28b = the d128 instances' tail split, kTailSplit / `tail_pieces`):
# (a) tests: gpu_hopper_prefill (asserts some persistent d128 cases cut their last round into
#     pieces), the packed-vs-dense identity, LSE, the sanitizer subset (a 136-tile d128 shape
#     now) under memcheck and racecheck;
# (b) same-call A/B, 3 rounds alternating, FUSED_ATTN_SM90_TAIL_PIECES=1 (no split) against 4 and
#     8 (the default cap) on the d128 unmasked rows (4096 tiles each: 31.03 rounds of 132) and
#     the d128 2048 causal control (a drawn grid: unchanged).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s28b "memcheck racecheck" \
    gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_lse gpu_sanitizer_subset
  envab s28b 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128(_causal)?|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$' 3 FUSED_ATTN_SM90_TAIL_PIECES "off=1 p4=4 p8=8"
  cd "$L"
}
archived body
