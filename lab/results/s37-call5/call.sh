# Session 37 call 5: issue 14's table on the final code (pack s37b; the kernels are session
# 35's, SASS-identical to session 36's pack s35u, whose synccheck/memcheck/racecheck ran clean):
# torch run 1, ours, torch run 2 (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s37b
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/s37b/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
}
archived body
