# Session 38 call 4: issue 13's rows on main after the into-merge (pack s38b = 2e6e32a; bench_cpu
# from pack cpu38, a CPU-only build of the same commit):
#   1. criterion cuda_varlen_bf16 and cuda_paged_decode_bf16 (the paged rows from one loop since
#      821447c, not yet run), 2 rounds; torch's FA2 varlen on the same batch, same call;
#   2. the CPU cell on the host Xeon: bench_cpu --varlen packed, loop, packed_into, 31 reps,
#      cores 2,3, 2 threads, f32 twice and f16 once.
# When it ran, the body had issue13_rows' commands inline (the same commands).
. lab/decode/check_ab.sh
body() {
  gpu_info
  issue13_rows s38b cpu38
}
archived body
