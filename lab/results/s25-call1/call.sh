# Session 25 call 1 (prepared in session 24 as s24-next/call.sh; rewritten with
# lab/decode/check_ab.sh's helpers after the run, same steps): the paged staging diff (pack
# h90-s25p: `git apply lab/results/s24-next/staging.diff; lab/pack-h90.sh s25p`) against main
# (h90-s25m). 1. decode tests and memcheck on s25p; 2. the bar's paged rows alternating, 3
# rounds; 3. ncu's kernel-only durations of three rows on main's pack, to split the paged call's
# fixed cost into kernel and index upload.
R=$OUT/r; . lab/decode/check_ab.sh
gpu_info
decode_tests s25p memcheck
bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_hostidx)' 3 s25m s25p
kernel_durations s25m contiguous_b32_h32_kv8_q1_k4096_d128 paged16_hostidx_b32_h32_kv8_q1_k4096_d128 paged256_hostidx_b32_h32_kv8_q1_k4096_d128
