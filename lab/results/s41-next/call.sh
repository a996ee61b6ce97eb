# Prepared at the end of session 40 (plan item 0): name the input behind call 6's
# CUDA_ERROR_ILLEGAL_ADDRESS. Pack: `PACK_HUNT=1 lab/pack-h90.sh s41ph` on main, renamed to
# device-pack/h90-s41ph-9.tar.xz (built at the end of session 40 from b5b1898, the hunt of f3fa5d9;
# carry only device-pack, nothing else in it: the carry limit is 64 MiB with the tree).
# 1. The CUDA hunt: on a GPU every hunted call is followed by a device synchronize, and a fault
#    ends the process with "CUDA FAULT after <entry> | <case>" (exit 3); the trace file names
#    the running call if it hangs instead (a1e91ba may already have removed the cause: the
#    packed problem's seq_q/seq_k are the longest lengths since then).
# 2. If it names a case: that case's seed alone (PANIC_HUNT_N from the seed) under memcheck.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41ph
  cd /tmp/s41ph && head -3 COMMIT
  PANIC_HUNT_TRACE=1 PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} \
    timeout 300 bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1
  echo "hunt rc=$?"
  cp /tmp/panic_hunt_current "$R/" 2>/dev/null && echo "last call: $(cat /tmp/panic_hunt_current)"
  grep -v "<unknown>" "$R/hunt.log" | grep -nE "CUDA FAULT|outside|after |PANICS|SUSPICIOUS|INTERNAL|test result|total calls" | head -20
  cd "$L"
}
archived body
