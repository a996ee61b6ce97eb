# Session 45 call 3, pack s45a (15e2f58: main's kernels + FUSED_ATTN_DECODE_PARTIALS=block).
# (1) The 2048 decode by splits and partials (3 rounds alternating). The stamps of call 2 put
# the split blocks' load phase at a per-SM rate (~25-29 GB/s in the flushed burst: 64 KB per SM
# lands ~2.2 µs after issue at 8 splits, 132 KB ~5.3 µs on the 4-stage ring), so more SMs move
# the bytes sooner (16 splits: partials stored 5.8 against 7.1 µs after entry) but per-warp
# partials double the combine's (end 10.7 against 11.0). PREDICTION: 16 splits with per-block
# partials (16 a row, against main's 32 per-warp) 12.8-13.1 µs against main's 13.3-13.5;
# 8 splits per-block +0.3 µs (session 20's direction); 32 splits per-block (256 blocks, 2 an SM)
# no better than 16. (2) The whole GPU test binary and the torch float64 oracle, synccheck of
# the sanitizer subset: none ran in session 44.
. lab/decode/check_ab.sh
body() {
  gpu_info
  cfg_rounds 3 "w8 s45a $ROW_2048 X=1" "w16 s45a $ROW_2048 FUSED_ATTN_DECODE_SPLITS=16" \
    "b16 s45a $ROW_2048 FUSED_ATTN_DECODE_SPLITS=16 FUSED_ATTN_DECODE_PARTIALS=block" \
    "b8 s45a $ROW_2048 FUSED_ATTN_DECODE_PARTIALS=block" \
    "b32 s45a $ROW_2048 FUSED_ATTN_DECODE_SPLITS=32 FUSED_ATTN_DECODE_PARTIALS=block"
  gpu_tests s45a "synccheck" gpu_decode
  gpu_all s45a 280
}
archived body
