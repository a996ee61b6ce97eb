# Prepared at the end of session 40 (plan item 0): name the input behind call 6's
# CUDA_ERROR_ILLEGAL_ADDRESS. Pack: `PACK_HUNT=1 lab/pack-h90.sh s41ph` on main, renamed to
# device-pack/h90-s41ph-9.tar.xz (built at the end of session 40 from b5b1898, the hunt of f3fa5d9;
# carry only device-pack, nothing else in it: the carry limit is 64 MiB with the tree).
# 1. The CUDA hunt: on a GPU every hunted call is followed by a device synchronize, and a fault
#    ends the process with "CUDA FAULT after <entry> | <case>" (exit 3); the trace file names
#    the running call if it hangs instead (a1e91ba may already have removed the cause: the
#    packed problem's seq_q/seq_k are the longest lengths since then).
# 2. If it names a case: that case's seed alone (PANIC_HUNT_N from the seed) under memcheck.
# (The hunt's commands, as run, now live in check_ab.sh's cuda_hunt.)
. lab/decode/check_ab.sh
body() {
  gpu_info
  cuda_hunt s41ph 300
}
archived body
