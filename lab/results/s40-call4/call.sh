# Session 40 call 4: issue 13's rows on main's code at this session's end (pack s40h, bench
# only; bench_cpu from pack cpu40, a CPU-only build of the same commit):
#   1. criterion cuda_varlen_bf16 and cuda_paged_decode_bf16, 2 rounds; torch's FA2 varlen on
#      the same batch, same call;
#   2. the CPU cell on the host Xeon: bench_cpu --varlen packed, loop, packed_into, 31 reps,
#      cores 2,3, 2 threads, f32 twice and f16 once (session 38 call 4's commands).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s40h; unpack cpu40
  export FUSED_ATTN_BENCH_CUDA_ONLY=1
  for r in 1 2; do
    (cd /tmp/s40h && CRITERION_HOME=/tmp/vcrit-$r timeout 150 bin/bench 'cuda_(varlen|paged_decode)_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/vbench_$r.log" 2>&1)
    echo "vbench $r rc=$?"; medians /tmp/vcrit-$r | sed "s/^/round=$r /" | tee -a "$R/vmedians.txt"
  done
  (cd /tmp/s40h && timeout 150 python3 scripts/bench_torch_varlen.py --out "$R" > "$R/torch_varlen.log" 2>&1); echo "torch varlen rc=$?"
  tail -12 "$R/torch_varlen.log"
  lscpu > "$R/lscpu.txt"
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 100 taskset -c 2,3 /tmp/cpu40/bin/bench_cpu --varlen --dtype ${run%_*} --reps 31 --only packed,loop,packed_into \
      > "$R/cpu_$run.json" 2> "$R/cpu_$run.err"
    echo "cpu $run rc=$?"; cut -c1-40,200-400 "$R/cpu_$run.json" | head -6
  done
}
archived body
