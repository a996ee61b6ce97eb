# Session 47, call 3: the epilogue without its first named barrier (pack s47c, 370aca4 = s47b +
# that change; full pack) against s46a (session 46's kernels).
# 1. The Hopper prefill's correctness tests on s47c, as call 2 ran them on s47b.
# 2. bench A/B, 3 rounds alternating, the same six prefill rows as call 2.
# 3. racecheck and synccheck of the sanitizer subset on s47c (the staging writes now follow no
#    barrier: their ordering against the copy-out's reads and the TMA store is the second one's).
# PREDICTION: s47c / s46a 0.3-0.5% below call 2's s47b / s46a on the 2048 rows (0.989 d128,
# 0.985 causal), about level at 4096; racecheck and synccheck: 0 hazards.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s47c
  (cd /tmp/s47c && cat COMMIT
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_lse gpu_sweep_bf16 gpu_sweep_f16 gpu_varlen_sweep_bf16; do
     timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|SKIPPED" "$R/tests.log" | cut -c1-200)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128)$' 3 s46a s47c
  echo "bench done at $(( $(date +%s) - S0 )) s"
  for tool in synccheck racecheck; do
    left=$(( 560 - ($(date +%s) - S0) ))
    (cd /tmp/s47c && timeout $left compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture \
       > "$R/san_$tool.log" 2>&1; echo "$tool rc=$? (limit ${left}s)"; grep -E "SUMMARY|test result|hazard" "$R/san_$tool.log" | tail -3)
  done
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
