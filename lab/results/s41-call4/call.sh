# Session 41 call 4: call 3 again after its two test bugs (the hunt's warm-up gather out of range,
# the new GPU test casting an empty gradient); packs s41ph4 and s41c (the hunt and the GPU tests
# of a6717ee), gpu_empty_inputs under memcheck; not the whole binary (call 3 ran it: 32 passed).
# (The hunt's commands, as run, now live in check_ab.sh's cuda_hunt.)
. lab/decode/check_ab.sh
body() {
  gpu_info
  cuda_hunt s41ph4 150
}
body2() {
  body
  gpu_tests s41c "" gpu_empty_inputs gpu_varlen_huge_max_seqlen
  (cd /tmp/s41c && timeout 100 compute-sanitizer --tool memcheck bin/gpu gpu_empty_inputs --exact --nocapture > "$R/san_empty.log" 2>&1; echo "memcheck empty rc=$?"; grep -E "SUMMARY|test result" "$R/san_empty.log" | tail -2)
}
archived body2
