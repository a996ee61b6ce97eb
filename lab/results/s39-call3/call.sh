# Session 39 call 3: issue 14's table on main after the decode-tail merge (pack s39a = fd0a74b):
# torch run 1, ours, torch run 2 (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s39a
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/s39a/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
}
archived body
