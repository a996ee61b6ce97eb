# Session 31 call 4: synccheck of gpu_sanitizer_subset on the kept kernels (s31f), then issue
# 14's table: torch (cuDNN, FA2) run 1, our bench rows, torch run 2, in one call
# (python3 ../s28-call3/table.py r in this folder makes the table).
. lab/decode/check_ab.sh
# (Rewritten in session 31 to call the same commands through check_ab.sh table_call.)
body() { table_call s31f; }
archived body
