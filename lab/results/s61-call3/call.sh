# Session 61, call 3: call 2's two-core build times (158.8 / 165.2 s wall on CPUs 0,1 and 2,3)
# checked against the host's topology: are CPUs 0 and 1 hyper-thread siblings (one physical
# core, which would understate two cores)? Then one more run on two CPUs of different physical
# cores, the clock sampled while it runs.
# PREDICTION: 0 and 1 are distinct cores (siblings are N and N+8 on most hosts); the run on two
# distinct cores lands within 5% of call 2's (155-170 s wall).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz|NUMA node0' | head -12
  lscpu -e=CPU,CORE,SOCKET,NODE,MAXMHZ | head -20
  for c in 0 1 2 3; do echo "cpu$c siblings: $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list)"; done
  # Two CPUs on different physical cores: CPU 0 and the first CPU whose core differs.
  local c1; c1=$(lscpu -p=CPU,CORE | grep -v '^#' | awk -F, 'NR==1{core=$2} $2!=core{print $1; exit}')
  echo "pinned to 0,$c1"
  (for i in $(seq 40); do grep MHz /proc/cpuinfo | awk -v a=0 -v b="$c1" 'NR-1==a||NR-1==b{printf "%s ", $4}'; echo; sleep 4; done) > "$R/mhz.txt" &
  local m=$!
  taskset -c "0,$c1" bash lab/tools/build_time.sh lab/bin/gen 2 2>&1 | grep -v 'ptxas info'
  kill $m 2>/dev/null
  echo "MHz samples (cpu0 cpu$c1):"; head -30 "$R/mhz.txt" | tr '\n' '|'; echo
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
