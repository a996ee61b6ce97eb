# Session 41 call 2: the CUDA panic hunt again (call 1's stopped at a harness cast candle's CUDA
# backend lacks, outside any hunted call; fixed in pack s41ph2). A synchronize after every call;
# on a CUDA FAULT, the hunt up to that seed under compute-sanitizer memcheck.
# (The hunt's commands, as run, now live in check_ab.sh's cuda_hunt.)
. lab/decode/check_ab.sh
body() {
  gpu_info
  cuda_hunt s41ph2 420
}
archived body
