# Session 39 call 3: issue 14's table on main after the decode-tail merge (pack s39a = fd0a74b):
# torch run 1, ours, torch run 2 (python3 lab/results/s28-call3/table.py r). When it ran, the
# body had table_runs' commands inline (the same commands; session 38's call 3 shape).
. lab/decode/check_ab.sh
body() {
  gpu_info
  table_runs s39a
}
archived body
