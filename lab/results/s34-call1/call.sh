# Session 34: session 33's two prepared branches merged (branch s34-both: s34-tma-store and
# s34-decode-bulk touch different kernels), one pack (s34c), so that one tests call and one
# A/B call cover both and the table runs on the code that would land. Three calls:
#   CALL=tests  gpu_hopper_prefill, gpu_sweep_bf16/f16, gpu_output_poisoned, gpu_lse (TMA store),
#               gpu_decode, gpu_varlen_paged_decode, gpu_errors (bulk decode), then memcheck,
#               racecheck and synccheck of gpu_sanitizer_subset;
#   CALL=ab     within s34c: the store against FUSED_ATTN_SM90_O_STORE=threads (prefill rows but
#               16k), the bulk decode against FUSED_ATTN_DECODE_BULK=0 (decode rows, paged
#               contiguous rows), 2 rounds each (A B, B A), then ncu of 32x4096 decode both ways;
#   CALL=table  torch run 1, main against s34c on every cuda_fused_attn_bf16 row (2 rounds,
#               alternating), torch run 2: issue 14's table (ours = the mean of s34c's two rounds)
#               and the cross-pack A/B (the compiled-in cost) in one call.
# Predictions (session 33): store: small rows -1 to -2%, d128 2048 -0.3 to -0.5%; bulk decode:
# 32x4096 -1 to -2%, 8x8192 -1%, the 2048 and Sq 4 rows even.
. lab/decode/check_ab.sh
tests_call() {
  gpu_info
  gpu_tests s34c "memcheck racecheck synccheck" gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 \
    gpu_output_poisoned gpu_lse gpu_decode gpu_varlen_paged_decode gpu_errors
}
ab_call() {
  gpu_info
  local R0="$R"
  R="$R0/store"; mkdir -p "$R"
  envab s34c 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_' 2 FUSED_ATTN_SM90_O_STORE \
    "tma=unset threads=threads"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  R="$R0/decode"; mkdir -p "$R"
  envab s34c 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k|cuda_paged_decode_bf16/contiguous' 2 FUSED_ATTN_DECODE_BULK \
    "bulk=unset cpasync=0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  for v in unset 0; do
    if [ "$v" = unset ]; then unset FUSED_ATTN_DECODE_BULK; else export FUSED_ATTN_DECODE_BULK=$v; fi
    (cd /tmp/s34c && timeout 90 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics \
      smsp__inst_executed.sum,gpu__time_duration.sum -k regex:fattn_decode -c 3 bin/bench \
      'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096' --bench --warm-up-time 0.1 --measurement-time 0.1 \
      --sample-size 10 --noplot > "$R/ncu_bulk_$v.txt" 2>&1; echo "ncu bulk=$v rc=$?")
  done
  unset FUSED_ATTN_DECODE_BULK
  R="$R0"
}
table2_call() {
  gpu_info
  torch_both 1
  bench_ab 'cuda_fused_attn_bf16/' 2 main "$PACK"
  torch_both 2
  grep "^pack=$PACK " "$R/ab_medians.txt" | awk '{n[$3]++; s[$3]+=$4} END {for (k in s) printf "%s %.2f us\n", k, s[k]/n[k]}' \
    | sort > "$R/medians.txt"
  python3 "$L/lab/results/s28-call3/table.py" "$R"
}
# The table runs on the pack that would land: s34a (main + the store) once the bulk decode lost
# (call 2: 0.73-0.95x the cp.async kernel's time on every decode row).
PACK="${PACK:-s34c}"
archived "${CALL:-tests}_call"
