# Prepared in session 25 for the next session (not run): the decode's K/V tile copies with an
# L2 prefetch-size hint (kernels/common/ptx.cuh cp_async_16_to_prefetch; a compile-time knob,
# default off, SASS-identical without it). Packs, each in its own target dir so they do not
# recompile each other:
#   lab/pack-h90.sh s26m
#   CARGO_TARGET_DIR=$FUSED_ATTN_CACHE/target-pf128 NVCC_FLAGS=-DFATTN_DECODE_L2_PREFETCH=128 lab/pack-h90.sh s26a
#   CARGO_TARGET_DIR=$FUSED_ATTN_CACHE/target-pf256 NVCC_FLAGS=-DFATTN_DECODE_L2_PREFETCH=256 lab/pack-h90.sh s26b
# (NVCC_FLAGS enters every file's key: a fresh target dir compiles all six, ~4 min here), then
# recompress each to device-pack/h90-TAG-9.tar.xz. Prediction: the full tiles' copies ask L2 for
# whole 128/256-byte runs (a d128 bf16 key row is 256 bytes), fewer and larger DRAM bursts:
# (32,32,8,1,4096) -1-2% (its split kernel at 84.5% of DRAM peak against cuDNN's 86.1%), the
# latency-bound 2048 row unchanged. About 6 minutes of device time.
. lab/decode/check_ab.sh
body() {
  gpu_info
  decode_tests s26b memcheck
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' 3 s26m s26a s26b
  torch_decode
}
archived body
