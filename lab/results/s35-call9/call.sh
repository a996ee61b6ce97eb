# Session 35 call 9: the final trimmed-block kernels (pack s35u: one trimmed width, 64 keys, and
# not in the _mods instances; call 7's pack s35t also had 128 and the _mods instances). Tests
# first (the Hopper prefill, the bf16 sweep, Hopper varlen, the prefill with the wide instances
# everywhere, memcheck), then the rows the trim moved in call 7, trim on / off, 2 rounds.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s35u "memcheck" gpu_hopper_prefill gpu_sweep_bf16 gpu_hopper_varlen
  (cd /tmp/s35u && FUSED_ATTN_SM90_WIDE_PADDING=100 timeout 60 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/w_prefill.log" 2>&1
   echo "wide-everywhere gpu_hopper_prefill rc=$?"; grep -hE "^gpu_|panicked" "$R/w_prefill.log" | cut -c1-250)
  envab s35u 'cuda_fused_attn_bf16/b(1_h8_kv8_q512_k512_d64|16_h16_kv16_q2048_k2048_d64_causal|16_h16_kv16_q2048_k2048_d256)' 2 \
    FUSED_ATTN_SM90_TRIM "trim=unset full=0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
