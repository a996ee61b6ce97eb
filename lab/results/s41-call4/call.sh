# Session 41 call 4: call 3 again after its two test bugs (the hunt's warm-up gather out of range,
# the new GPU test casting an empty gradient); packs s41ph4 and s41c (the hunt and the GPU tests
# of a6717ee), gpu_empty_inputs under memcheck; not the whole binary (call 3 ran it: 32 passed).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41ph4
  cd /tmp/s41ph4 && head -1 COMMIT
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
  gpu_tests s41c "" gpu_empty_inputs gpu_varlen_huge_max_seqlen
  (cd /tmp/s41c && timeout 100 compute-sanitizer --tool memcheck bin/gpu gpu_empty_inputs --exact --nocapture > "$R/san_empty.log" 2>&1; echo "memcheck empty rc=$?"; grep -E "SUMMARY|test result" "$R/san_empty.log" | tail -2)
}
archived body2
