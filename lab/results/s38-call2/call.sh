# Session 38 call 2: main after the CUDA into-path's merge (pack s38b = 2e6e32a): the launchers
# now take the caller's output view, so the whole GPU test binary, the torch float64 oracle
# and memcheck of the sanitizer subset run on it (the kernels themselves are unchanged since
# session 35; racecheck and synccheck ran clean on them in session 36).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s38b 330
  (cd /tmp/s38b && timeout 150 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1
   echo "memcheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_memcheck.log" | tail -2)
}
archived body
