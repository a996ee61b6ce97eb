# Session 44 call 4: the swapped decode tile (S^T = K·Q^T, O^T = V^T·P^T; pack s44c, on by
# default for dense plain f16/bf16 splits of ≤ 8 rows with per-warp partials), against
# FUSED_ATTN_DECODE_SWAPAB=0 (the m16 tile, same binary) and main (s44a).
# Prediction: half the mma and exp2 per 16-key tile shortens each warp's 4-tile chain on the
# 2048 row: 13.3 -> 12.7-13.0 µs; 32k and 8x8192 rows -0.5 to -2% (fewer instructions, still
# DRAM-bound); the Sq 4 (16-row) and 32x4096 (one split) rows unchanged (they do not take it).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s44a; unpack s44c
  gpu_tests s44c "memcheck racecheck" gpu_decode gpu_lse gpu_sweep_bf16 gpu_output_poisoned
  # (Rewritten after the call onto check_ab.sh's cfg_rounds: the same runs in the same order.)
  cfg_rounds 3 "main s44a $DECODE_ROWS X=1" "swapab s44c $DECODE_ROWS X=1" "m16 s44c $DECODE_ROWS FUSED_ATTN_DECODE_SWAPAB=0"
  torch_decode
}
archived body
