# Session 60, call 5 (pack s60b: the shipped kernels, whose PTX is s59c's; an H200): what
# session 59 did not run on its final pack: the whole GPU test binary, the float64 torch
# oracle and synccheck (of gpu_sanitizer_subset and of gpu_hopper_multicast).
# PREDICTION: all pass, 0 synccheck errors (the kernels ran them on s59a, which differs by the
# d96 `_mods` pair only).
. lab/decode/check_ab.sh
P=s60b
body() {
  S0=$(date +%s)
  gpu_info
  gpu_all $P 300
  echo "gpu_all done $(( $(date +%s) - S0 )) s"
  synccheck_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
