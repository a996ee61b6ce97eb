# Prepared at the end of session 30, not run: the plain d128 instance's two leftovers. Packs,
# all bench-only (bin/gpu stripped: three fit 64 MiB): s31a = HEAD; s31c = HEAD with
# d128_step_desc.diff (HopperTraits<128, 0> builds one shared-memory descriptor per operand and
# adds each k-step's offset, as every other instance does: ptxas 13.0, the key loop 868 -> 797
# static instructions, uniform-datapath ULOP3 37 -> 9, UMOV 23 -> 2, USHF 20 -> 6; no spills);
# s31d = HEAD with d128_step_desc_rescale.diff (the same plus the conditional rescale on: loop
# 813, no spills).
# Session 17 measured the step descriptors +1.5% slower on this instance (H100, unmasked
# 2048); session 30 measured the conditional rescale +0.0 to +0.6% on it (H200). Session 30's
# call 3 showed this instance's rows run at the H200's 700 W cap, where instructions cost
# clock: prediction, s31d -2 to -3% on the d128 2048 / 4096 / GQA rows (unmasked and causal),
# s31c -1%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048|4_h32_kv32_q4096_k4096|4_h32_kv4_q4096_k4096)_d128' 3 s31a s31c s31d
}
archived body
