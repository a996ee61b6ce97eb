# Session 31 call 2: the plain d128 instance with step descriptors (lab/results/s31-next/
# d128_step_desc.diff, s31c: loop 868 -> 797 instructions) and the same with the conditional
# rescale (d128_step_desc_rescale.diff, s31d), against HEAD (s31a), bench only, 3 rounds
# alternating. Prediction (session 30): -1% (s31c) and -2 to -3% (s31d) on d128 2048, 4096
# and GQA 8:1 non-causal, which run at the 700 W cap (fewer instructions, higher clocks).
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048|4_h32_kv32_q4096_k4096|4_h32_kv4_q4096_k4096)_d128' 3 s31a s31c s31d
}
archived body
