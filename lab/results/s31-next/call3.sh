# Prepared at the end of session 30, not run: d64 causal's overshoot. Packs: s31a = HEAD
# (bench-only); s31e = HEAD with half_last_block.diff (with bin/gpu: the tests below run on it).
# The change (HopperTraits<64, 0>::kHalfLastBlock): when no row of a 192-row tile sees the second
# half of its last 128-key block (every other tile under a causal mask at 2048: the tile's rows
# end 64 keys into the block), that block runs as a half block: Q·Kᵀ as wgmma n = 64 into its
# own 32-float S, the softmax and the P fragments on 64 columns, P·V in 4 k-steps instead of 8.
# Each path is a whole wgmma chain with its wait (a branch per k-step, or one that merges
# in-flight accumulators, made ptxas inject warpgroup.arrive, C7519; a generic lambda over the
# P fragments crashed cicc 13.0). ptxas 13.0: no C7519, no spills in the dense entry, 8 bytes
# outside the loop in the _varlen one; the kernel 3 384 -> 4 400 instructions; every other
# instance's SASS unchanged (nvdisasm md5: d128 plain and wide, d256 wide).
# Prediction: (16,16,16,2048,2048,64) causal -2 to -3% (a quarter of a block of ~8.7 per tile,
# tensor and softmax), the unmasked rows and every other instance unchanged.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s31e "memcheck racecheck" gpu_hopper_prefill gpu_hopper_varlen gpu_varlen_matches_dense_per_sequence gpu_sweep_bf16 gpu_sweep_f16 gpu_lse
  bench_ab 'cuda_fused_attn_bf16/b(1_h8_kv8_q512_k512|16_h16_kv16_q2048_k2048)_d64' 3 s31a s31e
}
archived body
