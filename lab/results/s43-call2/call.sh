# Session 43 call 2: issue 13's rows on main's HEAD (pack s43a = 100d185; bench_cpu from pack
# cpu43, a CPU build of the same commit):
#   1. criterion cuda_varlen_bf16 and cuda_paged_decode_bf16, 2 rounds; torch's FA2 varlen on
#      the same batch, same call;
#   2. the CPU cell on the host Xeon, cores 2,3, 2 threads, 31 reps, f32 twice and f16 once,
#      with the loop that keeps its outputs (loop_kept) beside packed, loop, packed_into.
# When it ran, the body had issue13_rows' commands inline with these variants, a 150 s limit
# on each criterion round (both rounds hit it; the helper has 240 s since) and 110 s on each
# CPU run (the helper's since).
. lab/decode/check_ab.sh
body() {
  gpu_info
  CPU_VARIANTS=packed,loop,loop_kept,packed_into issue13_rows s43a cpu43
}
archived body
