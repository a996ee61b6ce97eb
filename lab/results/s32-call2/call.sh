# Session 32 call 2: two lab knobs in one A/B (bench-only packs; the knobs touch different kernels).
# s32a = main 0192e12's kernels; s32b = FATTN_DECODE_LAB_ORDER=1 (decode: a contiguous quarter of
# the split's tiles per warp); s32c = FATTN_DECODE_LAB_ORDER=2 (decode: each block starts its
# warps' tile walks at its own rotation) + FATTN_LAB_D64_MODS_PINGPONG=0 (the d64 `_mods`
# instance, which the small rows run on, without ping-pong turns).
# Hypotheses: (1) call 1's ncu has the 32x4096 decode at the same bytes and grid as cuDNN but
# 86.3% of DRAM peak against 88.5%: where the 256 blocks' concurrent reads sit may matter;
# (2) the small rows are a 2-key-block latency chain per CTA, where turns only delay the second
# consumer's first GEMM. Decode rows: a/b/c; small rows: a = b (control) against c.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/(b[0-9]+_h32_kv8_q[14]_k|b1_h8_kv8_q512)' 3 s32a s32b s32c
  cd "$L"
}
archived body
