# Session 41 call 1: session 40's open CUDA fault, then the whole GPU binary on main.
# 1. The CUDA panic hunt on pack s41ph (b5b1898: the hunt of f3fa5d9 with a1e91ba's and 8aea1bc's
#    host fixes), a synchronize after every call, the running call's label in the trace file.
# 2. The old pack s40ph (99065c4, before the fixes) under compute-sanitizer memcheck, seeds
#    1000..1010 and 500000..500010 only (PANIC_HUNT_N=11): names the kernel and address of the
#    fault the audit traced to packed seed 500010.
# 3. Pack s41a (e4d81c9 = main: kernels as 992955c, gpu_varlen_huge_max_seqlen new): the whole
#    GPU test binary and the torch oracle, then memcheck, racecheck and synccheck of the subset.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41ph
  (cd /tmp/s41ph && head -1 COMMIT
   PANIC_HUNT_TRACE=1 PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} \
     timeout 150 bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1
   echo "hunt rc=$?"; cp /tmp/panic_hunt_current "$R/" 2>/dev/null && echo "last call: $(cut -c1-300 /tmp/panic_hunt_current)"
   grep -v "<unknown>" "$R/hunt.log" | grep -nE "CUDA FAULT|PANICS|SUSPICIOUS|INTERNAL|ERRORS ON|test result|total calls" | cut -c1-300 | head -20)
  unpack s40ph
  (cd /tmp/s40ph && head -1 COMMIT
   PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=11 timeout 100 \
     compute-sanitizer --tool memcheck --show-backtrace no bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/old_memcheck.log" 2>&1
   echo "old memcheck rc=$?"; grep -nE "Invalid|ERROR SUMMARY|fattn_[a-z0-9_]+|test result" "$R/old_memcheck.log" | cut -c1-250 | sort -u -t: -k2 | head -12)
  gpu_all s41a 280
  gpu_tests s41a "memcheck racecheck synccheck" gpu_varlen_huge_max_seqlen
}
archived body
