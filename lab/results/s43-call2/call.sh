# Session 43 call 2: issue 13's rows on main's HEAD (pack s43a = 100d185; bench_cpu from pack
# cpu43, a CPU build of the same commit):
#   1. criterion cuda_varlen_bf16 and cuda_paged_decode_bf16, 2 rounds; torch's FA2 varlen on
#      the same batch, same call (issue13_rows' commands);
#   2. the CPU cell on the host Xeon, cores 2,3, 2 threads, 31 reps, f32 twice and f16 once,
#      now with the loop that keeps its outputs (loop_kept) beside packed, loop, packed_into.
. lab/decode/check_ab.sh
body() {
  gpu_info
  local t=s43a c=cpu43
  unpack "$t"; unpack "$c"
  for r in 1 2; do
    (cd "/tmp/$t" && CRITERION_HOME=/tmp/vcrit-$r timeout 150 bin/bench 'cuda_(varlen|paged_decode)_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/vbench_$r.log" 2>&1)
    echo "vbench $r rc=$?"; medians /tmp/vcrit-$r | sed "s/^/round=$r /" | tee -a "$R/vmedians.txt"
  done
  (cd "/tmp/$t" && timeout 150 python3 scripts/bench_torch_varlen.py --out "$R" > "$R/torch_varlen.log" 2>&1); echo "torch varlen rc=$?"
  tail -12 "$R/torch_varlen.log"
  lscpu > "$R/lscpu.txt"
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 110 taskset -c 2,3 "/tmp/$c/bin/bench_cpu" --varlen --dtype ${run%_*} --reps 31 --only packed,loop,loop_kept,packed_into \
      > "$R/cpu_$run.json" 2> "$R/cpu_$run.err"
    echo "cpu $run rc=$?"; cut -c1-40,200-400 "$R/cpu_$run.json" | head -8
  done
}
archived body
