# Session 40 call 3: issue 14's table on main's code at this session's end (pack s40h, built
# from b8ec65c: kernels and bench as 992955c; bench-only): torch run 1, ours, torch run 2
# (python3 lab/results/s28-call3/table.py r).
. lab/decode/check_ab.sh
body() {
  gpu_info
  table_runs s40h
}
archived body
