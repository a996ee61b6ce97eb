# Session 28 call 4 (pack s28d = HEAD, the final kernels: the d128 tail split as measured in
# call 2, the wide d256 instance as in session 27): the whole GPU test binary (the torch
# oracle after it), then racecheck of the sanitizer subset (its d128 tail-split shape).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s28d 300
  (cd /tmp/s28d && timeout 170 compute-sanitizer --tool racecheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_racecheck.log" | tail -2)
  cd "$L"
}
archived body
