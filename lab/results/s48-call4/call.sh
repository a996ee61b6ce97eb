# Session 48, call 4: correctness of call 3's kernels (pack s48m, full: the producer wait hint
# and the per-tile mask span). The Hopper prefill's tests (persistent strided, tail-split,
# stream-K and drawn grids, every mask; varlen and its neighbours; LSE; the bf16 and varlen
# sweeps; f16 sweep), the torch float64 oracle, then memcheck, racecheck and synccheck of
# gpu_sanitizer_subset.
# PREDICTION: all pass, sanitizers clean (the span is exactly block_fully_visible's test).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s48m
  (cd /tmp/s48m && cat COMMIT
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_lse gpu_sweep_bf16 gpu_sweep_f16 gpu_varlen_sweep_bf16; do
     timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|SKIPPED" "$R/tests.log" | cut -c1-200
   echo "tests done at $(( $(date +%s) - S0 )) s"
   timeout 60 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
   FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 60 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
   echo "oracle rc=$?"; grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | head -5
   for tool in memcheck racecheck synccheck; do
     timeout 100 compute-sanitizer --tool "$tool" bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
   done)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
