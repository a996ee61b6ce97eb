# Prepared at the end of session 27, not run: the first GPU call of session 28. HEAD's launches
# through src/cuda/launch_ex.rs (the decode combine's PDL launch and the prefill's pair-split
# cluster launch, refactored after session 27's last device call) on a pack of HEAD
# (`lab/pack-h90.sh s28a`, recompressed as device-pack/h90-s28a-9.tar.xz): the decode and
# Hopper prefill tests, the sanitizer subset under memcheck, racecheck and synccheck.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s28a "memcheck racecheck synccheck" \
    gpu_decode gpu_varlen_paged_decode gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_sanitizer_subset
}
archived body
