# Session 24, call 1 (H100/H200): the decode kernels' exp2f through ex2.approx.ftz
# (lab/results/s23-next/ex2.diff), pack h90-s24x, against h90-s23c (main's kernels, 6efdbf9).
# Decode tests (both generations) and memcheck of the sanitizer subset on s24x, the decode rows
# alternating s23c / s24x 3 rounds, torch's decode rows in the same call; then issue 13's CPU
# row on the host Xeon (bench_cpu --varlen f32, 2 threads pinned to cores 2,3).
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
for t in s23c s24x; do mkdir -p /tmp/$t && tar -xJf device-pack/h90-$t-9.tar.xz -C /tmp/$t || exit 1; done
cd /tmp/s24x; head -3 COMMIT
export FUSED_ATTN_BENCH_CUDA_ONLY=1
for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do timeout 120 bin/gpu $t --exact --nocapture; echo "$t rc=$?"; done > $R/tests.log 2>&1
grep -E "rc=|cases ×|test result|panicked" $R/tests.log | cut -c1-200
timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "SUMMARY|test result" $R/san_memcheck.log | tail -2
echo "tests $(( $(date +%s) - S )) s"
for r in 1 2 3; do for t in s23c s24x; do
  CRITERION_HOME=/tmp/crit-$t-$r timeout 60 /tmp/$t/bin/bench 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/ab_${t}_$r.log 2>&1
  medians /tmp/crit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
echo "ab $(( $(date +%s) - S )) s"; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
mkdir -p $R/decode; timeout 60 python3 $L/scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; echo "torchd rc=$?"
grep -E "^\| decode" $R/decode/bench_torch.md | cut -d'|' -f3,4,5,8
echo "gpu total $(( $(date +%s) - S )) s"
lscpu > $R/lscpu.txt; grep -E "Model name|^CPU\(s\)" $R/lscpu.txt; grep -o "avx512[a-z_0-9]*\|amx[a-z_0-9]*" $R/lscpu.txt | sort -u | tr '\n' ' '; echo
cat /sys/kernel/mm/transparent_hugepage/enabled > $R/thp.txt 2>&1
for round in 1 2; do RAYON_NUM_THREADS=2 timeout 150 taskset -c 2,3 $L/device-pack/bench_cpu --varlen --dtype f32 --reps 21 > $R/cpu_varlen_f32_$round.json 2> $R/cpu_varlen_$round.err; echo "cpu round $round rc=$?"; done
cat $R/cpu_varlen_f32_*.json | python3 -c '
import sys, json
for l in sys.stdin:
    l = l.strip()
    if not l.startswith("{"): continue
    j = json.loads(l); print(j["varlen"], j["causal"], j["median_ms"], j["faults_per_call"], j["over_packed"], j["over_packed_into"])'
echo "total $(( $(date +%s) - S )) s"
rm -f $R/ab_*.log
tar -czf $OUT/r.tgz -C $OUT r
