# Session 24, call 2 (H200): the sm_90a build of the f16/bf16 decode split kernels, which
# release the combine launch as they start (griddepcontrol.launch_dependents), pack h90-s24t,
# against h90-s23c (main's kernels, 6efdbf9). Decode tests (both generations, the paged test's
# new case rotation) and the three sanitizers of the sanitizer subset on s24t, the decode rows
# alternating s23c / s24t 3 rounds, torch's decode rows in the same call. Rewritten in session
# 25 with lab/decode/check_ab.sh's helpers (the same steps).
R=$OUT/r; . lab/decode/check_ab.sh
body() {
  gpu_info
  decode_tests s24t "memcheck racecheck synccheck"
  decode_ab s23c s24t 3
  torch_decode
}
archived body
