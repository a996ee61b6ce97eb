# Session 61, call 2: issue 14's build-time bar (all kernels in <= 2 min on 2 cores) on the
# device host's CPU (Sapphire Rapids Xeon, no Rust: the generated units of this checkout are
# carried in lab/bin/gen), with build.rs's schedule (lab/tools/build_time.sh): two runs pinned
# to two cores (taskset -c 0,1; then 2,3), then one on all 16 for reference.
# PREDICTION: 95-110 s wall, 190-215 s of CPU on two cores (session 53's 2-vCPU Sapphire
# Rapids VM: 96.6 s / 191.3 s for six files; d96 added ~15 s of CPU since).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  lscpu | grep -E 'Model name|^CPU\(s\)|MHz' | head -5
  which nvcc; nvcc --version | tail -2
  taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen 2
  taskset -c 2,3 bash lab/tools/build_time.sh lab/bin/gen 2
  bash lab/tools/build_time.sh lab/bin/gen 6
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
