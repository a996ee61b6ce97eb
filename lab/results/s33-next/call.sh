# Prepared at the end of session 32 (branch s33-sm80-tail, not merged: no device time was left
# to test it). The lightest-last tile order on the sm_80 forward (every A100/Ada user; on the
# H200 through FUSED_ATTN_CUDA_KERNELS=sm80) and on the backward's grids (sm_80 and Hopper
# kernels: the last groups' key blocks across those groups, kernels/common/bwd_index.cuh
# `bwd_cta`), with the count moved from FattnHopperParams into FattnParams::tail_groups (so
# the Hopper and backward structs' offsets moved by 8 bytes). bwd_tail_map.cu here checks the
# backward's mapping on the host (a bijection, 400 cases); lab/bwd/bwd_selfcheck.cu passes.
# Pack: on the branch, `lab/pack-h90.sh s33a`, renamed device-pack/h90-s33a-9.tar.xz (the full
# pack: its GPU test binary is needed). About 10 minutes of device time:
#  1. the whole GPU binary and the oracle (gpu_all, ~250 s), then memcheck, racecheck and
#     synccheck of the sanitizer subset (~170 s): the struct move touches every kernel's params;
#  2. the sm_80 kernels' causal prefill rows with the order against FUSED_ATTN_SM80_TILE_ORDER=
#     plain, 2 rounds (prediction: -1 to -3% on the 2048/4096 causal rows, as on Hopper);
#  3. the backward's causal rows (Hopper backward) with the order against
#     FUSED_ATTN_BWD_TILE_ORDER=plain, 2 rounds (prediction: -1 to -3%);
#  4. the Hopper forward causal rows as a control (same order as main's s32f).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s33a 280
  gpu_tests s33a "memcheck racecheck synccheck"
  FUSED_ATTN_CUDA_KERNELS=sm80 envab s33a 'cuda_fused_attn_bf16/b(16|4)_.*_causal$' 2 FUSED_ATTN_SM80_TILE_ORDER \
    "sm80last=unset sm80plain=plain"
  envab s33a 'cuda_bwd_fused_bf16/b(16|4)_.*_causal$' 2 FUSED_ATTN_BWD_TILE_ORDER "bwdlast=unset bwdplain=plain"
  envab s33a 'cuda_fused_attn_bf16/b16_.*_causal$' 1 FUSED_ATTN_SM90_TILE_RULES "sm90all=unset"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
