# Session 41 call 3: the CUDA panic hunt on 6085ca6 (pack s41ph3: empty CUDA results as views, host
# allocations checked against memory, the hunt's rules updated), then pack s41b's new
# gpu_empty_inputs under memcheck and the whole GPU binary.
# (The hunt's commands, as run, now live in check_ab.sh's cuda_hunt.)
. lab/decode/check_ab.sh
body() {
  gpu_info
  cuda_hunt s41ph3 150
}
body2() {
  body
  gpu_tests s41b "" gpu_empty_inputs gpu_varlen_huge_max_seqlen
  (cd /tmp/s41b && timeout 100 compute-sanitizer --tool memcheck bin/gpu gpu_empty_inputs --exact --nocapture > "$R/san_empty.log" 2>&1; echo "memcheck empty rc=$?"; grep -E "SUMMARY|test result" "$R/san_empty.log" | tail -2)
  gpu_all s41b 280
}
archived body2
