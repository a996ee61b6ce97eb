# Session 49, call 3: the K/V multicast (kernels/fwd_sm90.cu kMulticast, pack s49mc) on a GPU
# for the first time. Call 2's probe (half of each K/V tile loaded, timing only) ran the d128
# rows 9.5-12% faster at +180 MHz under the 700 W cap. Multicast halves the L2 reads and the
# L2-to-GPC traffic of K/V for the same result; the two CTAs of a pair now wait for each
# other at every stage (a stage is refilled once both released it).
# 1. gpu_hopper_prefill (its cases now include two multicast grids and must run some), the
#    NaN tests and gpu_sweep_bf16.
# 2. envab, 2 rounds: multicast on (default rules) against off (FUSED_ATTN_SM90_TILE_RULES
#    naming every rule but `multicast`), the unmasked d128 rows (2048, 4096, GQA 8:1, 16k on
#    the wide instance), with d128 2048 causal and d64 2048 as controls (drawn / d64: no
#    multicast, must tie), nvidia-smi clocks alongside.
# PREDICTION: the unmasked d128 rows 3-7% faster (less than the probe: the pair's CTAs wait
# for each other, and multicast still delivers the bytes to both SMs); controls tie.
. lab/decode/check_ab.sh
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> "$R/marks.txt"; }
NOMC=dynamic,lightest-last,pairs,persistent,shift,small-grid,streamk,tail,wide
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49mc
  (cd /tmp/s49mc && cat COMMIT
   for t in gpu_hopper_prefill gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_sweep_bf16; do
     timeout 120 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases|FAIL|fail" "$R/tests.log" | cut -c1-260 | head -30)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$R/clocks.csv" 2> "$R/smi.err" &
  MON=$!
  envab s49mc 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128(_causal)?|b16_h16_kv16_q2048_k2048_d64|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$' 2 \
    FUSED_ATTN_SM90_TILE_RULES "mc=unset nomc=$NOMC"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  for cfg in mc nomc; do
    if [ $cfg = mc ]; then unset FUSED_ATTN_SM90_TILE_RULES; else export FUSED_ATTN_SM90_TILE_RULES=$NOMC; fi
    mark start "$cfg d128_2048"
    (cd /tmp/s49mc && timeout 60 bin/bench "cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128\$" --bench --warm-up-time 1 --measurement-time 3 --sample-size 10 --noplot > /dev/null 2>&1)
    mark end "$cfg d128_2048"
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  kill $MON
  python3 "$L/lab/results/s46-call6/clocks.py" "$R"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
