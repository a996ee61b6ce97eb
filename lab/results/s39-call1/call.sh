# Prepared at the end of session 38 (branch s38-merge-swizzle, no device time left to start a
# machine): the decode's end-of-block tail (session 38 call 8's ncu of the (32,32,8,1,4096,128)
# decode: the four-warp merge's shared stores at 28.3-way bank conflicts, 2 068 wavefronts a
# block where 256 do; the output's 2-byte stores using 2 of each 32-byte sector). Branch
# commits: 695b317 swizzles the merge buffer (merge_index), 46b9a93 stores the output rows in 16-byte
# pieces. Prediction: the one-split rows (32x4096) -1 to -3% (the tail, all 256 blocks ending
# together); 8x8192 (per-warp partials, no merge) even.
# Packs, in device-pack/ at the end of session 38: s38f = lab/pack-h90.sh on the branch tip (gpu +
# bench), s38db = main's bench (lab/pack-h90.sh on main, bin/gpu removed). Tests on s38f, then
# the A/B, 2 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s38f "" gpu_decode gpu_varlen_paged_decode gpu_varlen_into gpu_output_poisoned
  bench_ab 'cuda_fused_attn_bf16/b(32|8)_h32_kv8_q1_k' 2 s38db s38f
}
archived body
