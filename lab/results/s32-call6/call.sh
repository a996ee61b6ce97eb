# Session 32 call 6 (the session's last device time, ~5 minutes): the lightest-last order for
# grids of one block per tile too (d256, d192, the `_mods` instances under right-bounded masks;
# the hardware hands out their blocks in index order), pack s32f. The Hopper prefill tests
# first (every masked per-tile case now runs the new order), then the causal rows with every
# tile rule (default) against every rule but lightest-last, 2 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s32f "" gpu_hopper_prefill
  envab s32f 'cuda_fused_attn_bf16/b16_.*_causal$' 2 FUSED_ATTN_SM90_TILE_RULES \
    "all=unset nolast=small-grid,persistent,dynamic,wide,shift,streamk,pairs,tail"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
