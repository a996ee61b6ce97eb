# Session 33 call 2: branch s33-sm80-tail (pack s33a) -- A/B of the lightest-last order on the
# sm_80 forward (FUSED_ATTN_CUDA_KERNELS=sm80) and on the backward, 2 rounds; Hopper control.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s33a "" gpu_varlen_sweep_f16 gpu_varlen_sweep_f32  # call 1 timed out in these two
  FUSED_ATTN_CUDA_KERNELS=sm80 envab s33a 'cuda_fused_attn_bf16/b(16|4)_.*_causal$' 2 FUSED_ATTN_SM80_TILE_ORDER \
    "sm80last=unset sm80plain=plain"
  envab s33a 'cuda_bwd_fused_bf16/b(16|4)_.*_causal$' 2 FUSED_ATTN_BWD_TILE_ORDER "bwdlast=unset bwdplain=plain"
  envab s33a 'cuda_fused_attn_bf16/b16_.*_causal$' 1 FUSED_ATTN_SM90_TILE_RULES "sm90all=unset"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
