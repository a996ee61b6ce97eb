# Session 41 call 2: the CUDA panic hunt again (call 1's stopped at a harness cast candle's CUDA
# backend lacks, outside any hunted call; fixed in pack s41ph2). A synchronize after every call;
# on a CUDA FAULT, the hunt up to that seed under compute-sanitizer memcheck.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41ph2
  cd /tmp/s41ph2 && head -1 COMMIT
  PANIC_HUNT_TRACE=1 PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} \
    timeout 420 bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1
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
archived body
