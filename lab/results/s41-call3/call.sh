# Session 41 call 3: the CUDA panic hunt on 6085ca6 (pack s41ph3: empty CUDA results as views, host
# allocations checked against memory, the hunt's rules updated), then pack s41b's new
# gpu_empty_inputs under memcheck and the whole GPU binary.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41ph3
  cd /tmp/s41ph3 && head -1 COMMIT
  PANIC_HUNT_TRACE=1 PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} \
    timeout 150 bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1
  echo "hunt rc=$?"; cp /tmp/panic_hunt_current "$R/" 2>/dev/null && echo "last call: $(cut -c1-300 /tmp/panic_hunt_current)"
  grep -v "<unknown>" "$R/hunt.log" | grep -nE "CUDA FAULT|PANICS|SUSPICIOUS|INTERNAL|ERRORS ON|SLOW|test result|total calls|panic outside" | cut -c1-300 | head -20
  seed=$(grep -oE "CUDA FAULT after .*seed [0-9]+" "$R/hunt.log" | grep -oE "[0-9]+$" | head -1)
  if [ -n "$seed" ]; then
    n=$(( seed >= 500000 ? seed - 500000 + 1 : seed - 1000 + 1 ))
    PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=$n timeout 120 \
      compute-sanitizer --tool memcheck --show-backtrace no bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/memcheck.log" 2>&1
    echo "memcheck rc=$?"; grep -E "Invalid|at fattn|ERROR SUMMARY" "$R/memcheck.log" | sort | uniq -c | head
  fi
  cd "$L"
}
body2() {
  body
  gpu_tests s41b "" gpu_empty_inputs gpu_varlen_huge_max_seqlen
  (cd /tmp/s41b && timeout 100 compute-sanitizer --tool memcheck bin/gpu gpu_empty_inputs --exact --nocapture > "$R/san_empty.log" 2>&1; echo "memcheck empty rc=$?"; grep -E "SUMMARY|test result" "$R/san_empty.log" | tail -2)
  gpu_all s41b 280
}
archived body2
