# (gpu_tests, envab, fwd_durations: lab/decode/check_ab.sh since the end of session 27; this call ran the same functions inline.)
# Session 27 call 2 (pack s27b = small d64 grids split over clusters of two blocks, rule `pairs`):
# (a) tests: gpu_hopper_prefill (asserts some cases split over pairs), the packed-vs-dense
#     identity, LSE, poison, errors, NaN, the sanitizer subset (now with a pair-split shape) and
#     compute-sanitizer memcheck / racecheck / synccheck of it; (b) same-call A/B, 3 rounds
#     alternating, rules without `pairs` (base) against the default, on the small rows and the
#     d64 2048 controls; (c) ncu kernel durations of the small rows both ways.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk
body() {
  gpu_info
  gpu_tests s27b "memcheck racecheck synccheck" \
    gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_lse gpu_output_poisoned gpu_errors gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_sanitizer_subset
  envab s27b 'cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64|b16_h16_kv16_q2048_k2048_d64)' 3 FUSED_ATTN_SM90_TILE_RULES "base=$BASE pairs=unset"
  for cfg in base pairs; do
    if [ $cfg = base ]; then export FUSED_ATTN_SM90_TILE_RULES=$BASE; else unset FUSED_ATTN_SM90_TILE_RULES; fi
    fwd_durations s27b $cfg b1_h8_kv8_q512_k512_d64 b1_h8_kv8_q512_k512_d64_causal
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  cd "$L"
}
archived body
