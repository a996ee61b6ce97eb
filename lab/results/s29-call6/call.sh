# Session 29 call 6 (packs s29b = HEAD, s29c = the cluster split's halved exchange: rank c
# merges and stores consumer c's rows, so each rank sends one consumer's partial (18 KiB at
# d64) instead of rank 1 sending both (36 KiB) and rank 0 merging and storing all 128 rows).
# Call 5's phases (warm, ncu base clocks): the exchange took 1.5-1.8 µs after the last P·V,
# the merge and epilogue 1.6 µs, of a 9.9 µs CTA and a 12.6 µs kernel.
# Prediction: the small rows -0.7 to -1.0 µs (-6 to -8%), causal alike; the d64 2048 row
# (no cluster split) unchanged.
# (a) s29c: gpu_hopper_prefill, gpu_lse, the NaN/poison/error tests, the sanitizer subset and
#     memcheck/racecheck/synccheck of it;
# (b) same-call A/B, 4 rounds alternating s29b/s29c, the small rows and the d64 2048 control;
# (c) ncu durations of the small rows' kernel on both packs (cold, 50+ launches).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s29c "memcheck racecheck synccheck" gpu_hopper_prefill gpu_lse gpu_errors gpu_output_poisoned \
    gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_sanitizer_subset
  bench_ab 'cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64(_causal)?|b16_h16_kv16_q2048_k2048_d64)$' 4 s29b s29c
  fwd_durations s29b base b1_h8_kv8_q512_k512_d64 b1_h8_kv8_q512_k512_d64_causal
  fwd_durations s29c half b1_h8_kv8_q512_k512_d64 b1_h8_kv8_q512_k512_d64_causal
  cd "$L"
}
archived body
