# Session 59, call 6 (pack s59c = 4a17979: the d96 instances plain only; softcap/ALiBi at
# d72-96 back on d128's `_mods` instance, as before this session): the Hopper prefill test
# (every instance, the persistent cases, the d96 coverage assertion), the f16 and bf16 sweeps
# (random features: softcap/ALiBi at d72-96 among them), the Hopper varlen test, the LSE, the
# poisoned outputs and the NaN tests; memcheck of the sanitizer subset (its d96 case).
# PREDICTION: all pass; memcheck 0 errors.
. lab/decode/check_ab.sh
P=s59c
body() {
  S0=$(date +%s)
  gpu_info
  gpu_tests $P "memcheck" gpu_hopper_prefill gpu_sweep_f16 gpu_sweep_bf16 gpu_hopper_varlen gpu_lse gpu_output_poisoned \
    gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_varlen_matches_dense_per_sequence
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
