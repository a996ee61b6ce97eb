# Session 31 call 6: issue 13's CPU row on the host Xeon with per-thread parts in the pipelined
# waves (lab switch FUSED_ATTN_CPU_PARTS=1, lab/results/s31-cpu/) against the default claim
# order, 2 rounds alternating, f32 and f16, cores 2,3, 2 threads. bench_cpu built at the
# session's working tree (lab/bin/, carried).
R="${R:-/tmp/r}"; mkdir -p "$R"; L=$PWD
lscpu > "$R/lscpu.txt"
for r in 1 2; do for dt in f32 f16; do for env in FUSED_ATTN_CPU_PARTS=1 X=1; do
  env $env RAYON_NUM_THREADS=2 timeout 100 taskset -c 2,3 "$L/lab/bin/bench_cpu" --varlen --dtype $dt --reps 9 --only packed,loop,packed_into,padded > "$R/cpu_${dt}_${env%%=*}_$r.log" 2>&1
  echo "$r $dt $env rc=$?"; python3 -c "
import sys,json
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d=json.loads(l)
        if d['median_ms']>0 and d['varlen']!='packed': print('   ', 'causal' if d['causal'] else 'none  ', d['varlen'], f\"{d['median_ms']:.1f}\", 'over_packed', d['over_packed'])" "$R/cpu_${dt}_${env%%=*}_$r.log"
done; done; done
tar -czf "$OUT/r.tgz" -C "$(dirname "$R")" "$(basename "$R")"
