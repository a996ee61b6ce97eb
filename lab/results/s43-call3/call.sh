# Session 43 call 3: issue 14's table on main's code (pack s43a = 100d185; kernels as 992955c,
# unchanged since session 40): torch run 1, ours (cuda_fused_attn_bf16), torch run 2
# (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  gpu_info
  table_runs s43a
}
archived body
