# Session 45 call 13, pack s45b (6a9341e; src, kernels and tests as the session's final HEAD):
# the whole GPU test binary and the torch float64 oracle after the gradient harness fix (call 3
# ran them before it), then memcheck and racecheck of the sanitizer subset (not run since
# session 44 call 5). PREDICTION: everything passes, 0 errors, 0 hazards.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s45b 270
  (cd /tmp/s45b && for tool in memcheck racecheck; do
     timeout 110 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
   done)
}
archived body
