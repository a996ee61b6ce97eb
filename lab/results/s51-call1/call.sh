# Session 51, call 1: pack s51a (K-only multicast on the plain d128 instance, the trait
# kMulticastV; the wide instance keeps K+V). The tests that reach the Hopper path
# (gpu_hopper_multicast 6 cases, gpu_hopper_prefill, sweeps, NaN, poison, LSE, varlen = dense),
# memcheck of gpu_hopper_multicast, issue 14's table (torch run 1, ours, torch run 2), then the
# wide rule against the plain instance now that the plain one multicasts K only:
# FUSED_ATTN_SM90_WIDE_PADDING=1.0 (plain everywhere d128 unless exact) on the unmasked 4096
# (kv32, GQA 8:1) and 16k rows, 2 rounds alternating.
# PREDICTION: every test passes; d128 2048 2-3% faster than s50-call5 (974 µs -> 940-955),
# other rows as call 5 (±1% machine to machine). Plain at 4096: within ±1% of wide (plain
# K-only gained 2.8% at 2048, wide had 1-1.6% over the old plain); 16k: wide ahead by 1-2%.
. lab/decode/check_ab.sh
P=s51a
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  pack_tests $P gpu_hopper_multicast gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_output_poisoned gpu_lse gpu_varlen_matches_dense_per_sequence
  echo "tests done at $(( $(date +%s) - S0 )) s"
  table_runs $P
  table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  envab $P 'cuda_fused_attn_bf16/(b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$' 2 \
    FUSED_ATTN_SM90_WIDE_PADDING "rule=unset plain=1.0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  echo "envab done at $(( $(date +%s) - S0 )) s"
  left=$(( 560 - ($(date +%s) - S0) ))
  if [ $left -gt 30 ]; then
    (cd /tmp/$P && timeout $left compute-sanitizer --tool memcheck bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_memcheck.log" 2>&1
     echo "memcheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_memcheck.log" | cut -c1-200 | tail -3)
  fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
