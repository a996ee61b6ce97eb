# Session 26 call 1: session 25's prepared A/B (lab/results/s25-next/call.sh): the decode's K/V
# tile copies with an L2 prefetch-size hint (FATTN_DECODE_L2_PREFETCH through NVCC_FLAGS) 128
# (s26a) and 256 (s26b) against main's kernels (s25c: HEAD's kernels; c0f8544 after it changed
# only decode_sm80's header comment). Prediction: (32,32,8,1,4096) -1-2%, the latency-bound
# 2048 row unchanged.
. lab/decode/check_ab.sh
body() {
  gpu_info
  decode_tests s26b memcheck
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' 3 s25c s26a s26b
  torch_decode
}
archived body
