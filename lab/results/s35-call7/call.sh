# Session 35 call 7: the trimmed last key block of the Hopper prefill (branch s35-trim, pack s35t).
# Tests: the Hopper prefill, sweeps, varlen, LSE, sanitizers; the prefill and sweep again with
# every problem the wide instances can take on them (FUSED_ATTN_SM90_WIDE_PADDING=100), where
# most tiles end in a partial 176- or 80-key block. Bench: the issue-14 prefill rows with the
# trim on and off (FUSED_ATTN_SM90_TRIM=0, same binary), 2 rounds alternating; then the wide
# d128 instance at 2048/4096 keys (FUSED_ATTN_SM90_WIDE_PADDING=1.04) against the rule, trim on.
# Prediction: trim-on -0.8% at 16k d128, -1 to -2% on d256 (48 of 80 keys in its last block) and
# d64 causal (every other 192-row tile ends in half a block), the plain d128 rows unchanged
# (whole blocks); the wide instance at 4096 from +0.9% (call 6) to -1%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s35t "memcheck racecheck" gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_hopper_varlen \
    gpu_varlen_matches_dense_per_sequence gpu_lse gpu_output_poisoned
  (cd /tmp/s35t && for t in gpu_hopper_prefill gpu_sweep_bf16 gpu_hopper_varlen; do
     FUSED_ATTN_SM90_WIDE_PADDING=100 timeout 240 bin/gpu "$t" --exact --nocapture > "$R/w_$t.log" 2>&1
     echo "wide-everywhere $t rc=$?"; grep -hE "^gpu_|panicked|test result" "$R/w_$t.log" | cut -c1-300
   done)
  envab s35t 'cuda_fused_attn_bf16/b(1_h8_kv8_q512|16_h16_kv16_q2048|4_h32_kv32_q4096|1_h32_kv32_q16384|4_h32_kv4_q4096)' 2 \
    FUSED_ATTN_SM90_TRIM "trim=unset full=0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  mv "$R/envab_medians.txt" "$R/envab_trim.txt"
  envab s35t 'cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048|4_h32_kv32_q4096_k4096|4_h32_kv4_q4096_k4096)_d128$' 2 \
    FUSED_ATTN_SM90_WIDE_PADDING "rule=unset wide=1.04"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  mv "$R/envab_medians.txt" "$R/envab_wide.txt"
}
archived body
