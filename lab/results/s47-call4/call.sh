# Session 47, call 4: the storer (pack s47d: s47b + producer warp 1 issues the plain d128
# instance's TMA stores of O and frees the Q buffer; full pack) against s46a.
# 1. The Hopper prefill's correctness tests on s47d (as calls 2-3).
# 2. bench A/B, 3 rounds alternating, the plain d128 rows (the storer's instance) and a d64 control.
# 3. synccheck and racecheck of the sanitizer subset (its plain d128 shapes run the storer on
#    one-tile grids).
# PREDICTION (call 1: thread 0's TMA issue 0.19-0.27 us a tile on its warp's path): d128 2048
# s47d / s46a 0.98-0.985 (calls 2-3: s47b 0.989, s47c 0.988), 4096 0.99-0.995; d64 as s47b.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s47d
  (cd /tmp/s47d && cat COMMIT
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_lse gpu_sweep_bf16 gpu_sweep_f16; do
     timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|SKIPPED" "$R/tests.log" | cut -c1-200)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)|b4_h32_kv(32|4)_q4096_k4096_d128)$' 3 s46a s47d
  echo "bench done at $(( $(date +%s) - S0 )) s"
  for tool in synccheck racecheck; do
    left=$(( 420 - ($(date +%s) - S0) ))
    (cd /tmp/s47d && timeout $left compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture \
       > "$R/san_$tool.log" 2>&1; echo "$tool rc=$? (limit ${left}s)"; grep -E "SUMMARY|test result|hazard" "$R/san_$tool.log" | tail -3)
  done
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
