# ncu `--set full` of one launch of our bench, with the details page, the per-instruction SASS
# stall samples and a summary line, for device call scripts to source (session 23's calls
# defined it inline, lab/results/s23-call1..2/call.sh).
#   . lab/decode/prof.sh; cd <unpacked pack>; R=$OUT/r
#   prof TAG KERNEL_REGEX SKIP ROW [GROUP]   # GROUP: criterion group, default cuda_decode_layout_bf16
#   prof_torch TAG KERNEL_REGEX ROW_INDEX    # cuDNN's kernel, lab/decode/sdpa_layout.py --ncu ROW_INDEX
# SKIP counts earlier launches of that kernel. Until session 60 the bench made one untimed call
# per row of every group before its filter applied; now only of the rows the filter keeps.
# Summaries (printed by prof): python3 lab/tools/sass_stalls.py r/sass_TAG.csv
PROF_LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prof_summary() {
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Executed Instructions  |Elapsed Cycles|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" \
    "$R/details_$1.txt" | sed "s/^/$1: /" | head -10
}
prof() {
  timeout 200 ncu --set full --import-source no -k "regex:$2" --launch-skip "$3" -c 1 -f -o "/tmp/src_$1" bin/bench \
    "${5:-cuda_decode_layout_bf16}/$4" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot \
    > "$R/run_$1.log" 2>&1
  ncu -i "/tmp/src_$1.ncu-rep" --page details > "$R/details_$1.txt" 2>&1
  ncu -i "/tmp/src_$1.ncu-rep" --page source --csv --print-source sass > "$R/sass_$1.csv" 2>&1
  prof_summary "$1"
  python3 "$PROF_LAB/tools/sass_stalls.py" "$R/sass_$1.csv" | head -16
}
prof_torch() {
  timeout 200 ncu --set full -k "regex:$2" -c 1 -f -o "/tmp/src_$1" python3 "$PROF_LAB/decode/sdpa_layout.py" --ncu "$3" \
    > "$R/run_$1.log" 2>&1
  ncu -i "/tmp/src_$1.ncu-rep" --page details > "$R/details_$1.txt" 2>&1
  prof_summary "$1"
}
