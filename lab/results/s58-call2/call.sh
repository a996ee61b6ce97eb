# Session 58, call 2, the same H200 as call 1 (pack s58a, HEAD 99ed938): correctness of the
# shipped kernels on this GPU: the whole GPU test binary (oracle skipped), then the PyTorch
# float64 oracle, then memcheck of gpu_sanitizer_subset.
# PREDICTION: every test passes (36 passed, 1 ignored tool, ~250 s), oracle 24/24, memcheck 0 errors.
. lab/decode/check_ab.sh
P=s58a
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  gpu_all $P 300
  echo "gpu_all done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P && timeout 150 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1
   echo "memcheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_memcheck.log" | tail -2)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
