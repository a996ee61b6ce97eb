# Session 25 call 4: issue 14's decode rows on HEAD's pack (h90-s25c; the dense decode's code is
# main's, A/B 0.999-1.000 in calls 2-3) beside main's pack, with PyTorch's SDPA (cuDNN, FA2) in
# the same call; then issue 13's CPU rows on the host Xeon (bench_cpu --varlen, every variant,
# the output prefault on as shipped), cores 2,3, 2 threads. Results as one archive.
export FUSED_ATTN_BENCH_CUDA_ONLY=1
R=/tmp/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/decode/check_ab.sh
body() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
  torch_decode
  decode_ab s25m s25c 2
  (R=$R/t2; mkdir -p $R; torch_decode)
  echo "gpu $(( $(date +%s) - S )) s"
  lscpu > $R/lscpu.txt; grep -E "Model name|^CPU\(s\)" $R/lscpu.txt; grep -o "avx512[a-z_0-9]*\|amx[a-z_0-9]*" $R/lscpu.txt | sort -u | tr '\n' ' '; echo
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 110 taskset -c 2,3 $L/device-pack/bench_cpu --varlen --dtype ${run%_*} --reps 13 > $R/cpu_$run.json 2> $R/cpu_$run.err
    echo "cpu $run rc=$?"
    python3 -c "
import sys,json
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d=json.loads(l); print('  ', d['varlen'], 'causal' if d['causal'] else 'none', d['median_ms'], d['faults_per_call'], d.get('over_packed'), d.get('over_packed_into'))
" $R/cpu_$run.json
  done
  echo "total $(( $(date +%s) - S )) s"
}
body 2>&1 | tee $R/call.log
tar -czf $OUT/r.tgz -C /tmp r
