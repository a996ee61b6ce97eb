# Prepared at the end of session 30, not run: a first GPU call for session 31. Packs: s31a =
# HEAD (`lab/pack-h90.sh s31a`, renamed device-pack/h90-s31a-9.tar.xz, bin/gpu stripped out to
# fit 64 MiB), s31b = HEAD with mask_hi_only.diff applied (`git apply
# lab/results/s31-next/mask_hi_only.diff && lab/pack-h90.sh s31b`, renamed, then revert).
# The change: in the Hopper prefill's masked key blocks, a row whose visible keys start at or
# before the block (causal masks; a window's right-edge blocks) tests only the upper bound:
# one ISETP (immediate) and one FSEL per score instead of two ISETPs and an FSEL. ptxas 13.0
# (sm_90a): the plain d64 instance spills 8 bytes outside its key loop (prologue/epilogue),
# none in it; the loop grows 730 -> 908 static instructions (the second masking path), the
# executed masked path shrinks by ~64 instructions per block and thread; d128, the wide d256
# and d64 `_mods` instances: no spills.
# Prediction: d64 2048 causal -1 to -2% (21 of its 96 key blocks are masked; issue-bound),
# the small causal row -1 to -3%, unmasked rows unchanged.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s31b "memcheck" gpu_hopper_prefill gpu_hopper_varlen gpu_varlen_matches_dense_per_sequence gpu_sweep_bf16
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_k[0-9]+_d(64|128|256)' 3 s31a s31b
}
archived body
