# Session 32 call 3: the drawn (causal) grids' last (batch, head) pairs heaviest first across
# those pairs (FattnHopperParams::tail_pairs, kernels/common/grid.cuh query_block_tail), one
# pack (s32d) under the lab switch FUSED_ATTN_LAB_TAIL_ROUNDS (unset: off = main's order; R:
# about R rounds of 132 tiles in the tail group). Call 1's ncu: d64 2048 causal SMs active
# 600.8k of 633.5k cycles (5.2% idle, the unmasked row 1.3%): the launch ends on a tail of
# long tiles (the last heads' heaviest tiles start last). Session 16's version (every group of
# heads, H100) lost 1.7% at d128 2048 causal; this one keeps a head's tiles together except in
# the tail. Rows: every causal prefill row (small and d256 are per-tile grids: controls).
# First, the Hopper prefill tests with the switch at 2 (the new order exercised).
. lab/decode/check_ab.sh
body() {
  gpu_info
  FUSED_ATTN_LAB_TAIL_ROUNDS=2 gpu_tests s32d "" gpu_hopper_prefill
  envab s32d 'cuda_fused_attn_bf16/b.*_causal$' 3 FUSED_ATTN_LAB_TAIL_ROUNDS "off=unset r1=1 r2=2"
  # (ran as an inline copy of envab_table.py, moved to that file afterwards)
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  cd "$L"
}
archived body
