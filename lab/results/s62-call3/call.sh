# Session 62, call 3: pack s62a's compute-sanitizer record (memcheck and racecheck of the
# gpu_sanitizer_ tests, synccheck of the subset and of the multicast test), then the kernel
# build on two host vCPUs, before (lab/bin/gen0: HEAD 471bdb6's units) and after the merge
# (lab/bin/gen: s62a's), alternating in one call (taskset, CPUs 0-1).
# PREDICTION: 0 errors, 0 hazards; the merged build 20-25% below the old one in the same call
# (call 2: 113.4 s wall on this host type).
. lab/decode/check_ab.sh
N=s62a
body() {
  S0=$(date +%s)
  gpu_info
  sanitize_stage $N
  echo "sanitize done $(( $(date +%s) - S0 )) s"
  synccheck_stage $N
  echo "synccheck done $(( $(date +%s) - S0 )) s"
  taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen0 2
  echo "old build done $(( $(date +%s) - S0 )) s"
  if (( $(date +%s) - S0 < 470 )); then taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen 2; fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
