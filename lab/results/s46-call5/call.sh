# Session 46 call 5: issue 14's table on pack s46a (HEAD's kernels, session 40's, unchanged
# this session; the bench's default timing unchanged): torch run 1, ours
# (cuda_fused_attn_bf16), torch run 2 (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  table_runs s46a
  python3 lab/results/s28-call3/table.py "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
