# Session 62, call 2: pack s62a (call 1's merged sm_80 prefill/backward) on the whole GPU test
# binary and the float64 torch oracle, its cold start (CUDA_CACHE_DISABLE=1), then the kernel
# build of its units on two host vCPUs (session 61's method: taskset, one vCPU per core).
# PREDICTION: every test passes, oracle 24/24; cold start within 0.02 s of session 61's
# +0.005 / +0.007 / +0.008 s (the Hopper kernels are unchanged; the sm_80 cubins shrink);
# the build on two host vCPUs 20-25% below session 61's 141-165 s (this VM: 94.3 s against
# 120.8 s for the same files before the merge).
. lab/decode/check_ab.sh
N=s62a
body() {
  S0=$(date +%s)
  gpu_info
  gpu_all $N 300
  echo "gpu_all done $(( $(date +%s) - S0 )) s"
  coldstart_stage $N
  echo "coldstart done $(( $(date +%s) - S0 )) s"
  lscpu | grep -E "Model name|^CPU\(s\)|MHz" | head -4
  taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen 2
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
