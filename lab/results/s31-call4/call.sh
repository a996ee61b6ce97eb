# Session 31 call 4: synccheck of gpu_sanitizer_subset on the kept kernels (s31f), then issue
# 14's table: torch (cuDNN, FA2) run 1, our bench rows, torch run 2, in one call
# (python3 ../s28-call3/table.py r in this folder makes the table).
. lab/decode/check_ab.sh
PACK=s31f
body() {
  gpu_info
  gpu_tests $PACK "synccheck"
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  cd "$L"
}
archived body
