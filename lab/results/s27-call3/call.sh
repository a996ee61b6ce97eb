# (gpu_tests, envab, fwd_durations: lab/decode/check_ab.sh since the end of session 27; this call ran the same functions inline.)
# Session 27 call 3 (pack s27c: small d64 grids split over clusters of 4 blocks (rule `quads`,
# 3+ key blocks) or 2 (`pairs`)): (a) tests: gpu_hopper_prefill (asserts some cases split),
# the packed-vs-dense identity, LSE, poison, the sanitizer subset (a shape split over 4 and one
# over 2) and compute-sanitizer memcheck / racecheck / synccheck of it; (b) same-call A/B, 3
# rounds alternating, on the small rows: no split (base), pairs only, the default (quads);
# (c) ncu kernel durations of the small rows, pairs against quads.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk
body() {
  gpu_info
  gpu_tests s27c "memcheck racecheck synccheck" \
    gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_lse gpu_output_poisoned gpu_sanitizer_subset
  envab s27c 'cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64' 3 FUSED_ATTN_SM90_TILE_RULES "base=$BASE pairs=$BASE,pairs quads=unset"
  for cfg in pairs quads; do
    if [ $cfg = pairs ]; then export FUSED_ATTN_SM90_TILE_RULES=$BASE,pairs; else unset FUSED_ATTN_SM90_TILE_RULES; fi
    fwd_durations s27c $cfg b1_h8_kv8_q512_k512_d64 b1_h8_kv8_q512_k512_d64_causal
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  cd "$L"
}
archived body
