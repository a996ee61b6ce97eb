# Session 38 call 3: issue 14's table on main after the into-path's merge (pack s38b = 2e6e32a;
# the kernels are session 35's, the launchers now take an output view): torch run 1, ours,
# torch run 2 (python3 lab/results/s28-call3/table.py r). When it ran, the body had
# table_runs' commands inline (lab/decode/check_ab.sh; the same commands).
. lab/decode/check_ab.sh
body() {
  gpu_info
  table_runs s38b
}
archived body
