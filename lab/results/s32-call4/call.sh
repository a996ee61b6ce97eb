# Session 32 call 4: issue 14's table on the kept kernels (pack s32e: main + the lightest-last
# order of drawn grids, the default) with synccheck of the sanitizer subset (table_call: torch
# run 1, our bench rows, torch run 2), then memcheck and racecheck of the subset.
# python3 ../s28-call3/table.py r in this folder makes the table.
. lab/decode/check_ab.sh
body() {
  table_call s32e
  gpu_tests s32e "memcheck racecheck"
}
archived body
