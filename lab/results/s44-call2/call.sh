# Session 44 call 2: the decode split kernel's ring filled before the first wait, and a
# 4-stage ring for short splits on few blocks (pack s44b; s44a = main's kernels).
# Prediction: the 2048 row's warps (4 tiles each at 8 splits) now have every tile in flight
# from the start: one DRAM round trip less on the chain, 13.3 -> ~12.6-12.9 µs; the other
# decode rows (3-stage ring, prologue only) within ±0.5%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s44a; unpack s44b
  gpu_tests s44b "" gpu_decode gpu_varlen_paged_decode gpu_lse
  (cd /tmp/s44b && FUSED_ATTN_DECODE_STAGES=4 timeout 200 bin/gpu gpu_decode --exact --nocapture > "$R/t_decode_stages4.log" 2>&1; echo "gpu_decode stages4 rc=$?"
   grep -hE "^gpu_|panicked" "$R/t_decode_stages4.log" | cut -c1-300
   for tool in memcheck racecheck; do
     FUSED_ATTN_DECODE_STAGES=4 timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san4_$tool.log" 2>&1
     echo "stages4 $tool rc=$?"; grep -E "SUMMARY|test result" "$R/san4_$tool.log" | tail -2
   done)
  # (Rewritten after the call onto check_ab.sh's cfg_rounds: the same runs in the same order.)
  cfg_rounds 3 "main s44a $DECODE_ROWS X=1" "ring4 s44b $DECODE_ROWS X=1" "stages3 s44b $DECODE_ROWS FUSED_ATTN_DECODE_STAGES=3" \
    "split11 s44b $ROW_2048 FUSED_ATTN_DECODE_SPLITS=11" "split16 s44b $ROW_2048 FUSED_ATTN_DECODE_SPLITS=16"
  torch_decode
}
archived body
