# Session 45 call 5: issue 14's table on pack s45b (6a9341e; kernels as session 40's, the
# bench's torch-shaped flush): torch run 1, ours (cuda_fused_attn_bf16), torch run 2
# (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  gpu_info
  table_runs s45b
}
archived body
