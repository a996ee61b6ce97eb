# Session 38 call 9: the decode merge buffer swizzled (kernels/decode_sm80.cu merge_index; call
# 8's ncu: 28.3-way conflicts on its shared stores, 2 068 wavefronts a block where 256 do, at
# the end of each block). Prediction: the one-split rows (32x4096) -1 to -2% (the merge tail,
# ~2-4k cycles a block, all blocks ending together); 8x8192 (per-warp partials, no merge) even.
# Pack s38e (the change, gpu + bench) against s38db (main's bench): gpu_decode on s38e, then the
# two rows, 2 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s38e "" gpu_decode
  bench_ab 'cuda_fused_attn_bf16/b(32|8)_h32_kv8_q1_k' 2 s38db s38e
}
archived body
