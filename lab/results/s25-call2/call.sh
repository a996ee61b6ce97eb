# Session 25 call 2: the varlen decode's one tile-copy path (pack h90-s25v: kernels/decode_sm80.cu's
# issue_tile with one inlined load_kv_tile, 255 -> 232 registers at bf16 d128) against main
# (h90-s25m): decode tests + memcheck on s25v, the paged rows of the bar alternating 3 rounds,
# kernel-only durations (ncu) of both packs' varlen decode; then the CPU packed batch on the
# host Xeon with the output prefault on and off (FUSED_ATTN_CPU_PREFAULT=0), cores 2,3.
export FUSED_ATTN_BENCH_CUDA_ONLY=1
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/decode/check_ab.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
decode_tests s25v memcheck
echo "tests $(( $(date +%s) - S )) s"
unpack s25m
for r in 1 2 3; do for t in s25m s25v; do
  CRITERION_HOME=/tmp/pcrit-$t-$r timeout 100 /tmp/$t/bin/bench 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_hostidx|packed_hostidx)' --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > /tmp/pab_${t}_$r.log 2>&1
  medians /tmp/pcrit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
echo "ab $(( $(date +%s) - S )) s"
lscpu > $R/lscpu.txt; grep -E "Model name|^CPU\(s\)" $R/lscpu.txt; grep -o "avx512[a-z_0-9]*\|amx[a-z_0-9]*" $R/lscpu.txt | sort -u | tr '\n' ' '; echo
for round in 1 2; do for pf in 0 1; do
  FUSED_ATTN_CPU_PREFAULT=$pf RAYON_NUM_THREADS=2 timeout 100 taskset -c 2,3 $L/device-pack/bench_cpu --varlen --dtype f32 --reps 11 --only packed,loop,packed_into > $R/cpu_pf${pf}_$round.json 2> $R/cpu_pf${pf}_$round.err
  echo "cpu prefault=$pf round=$round rc=$?"
  python3 -c "
import sys,json
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d=json.loads(l); print('  ', d['varlen'], 'causal' if d['causal'] else 'none', d['median_ms'], d['faults_per_call'], d.get('over_packed'), d.get('over_packed_into'))
" $R/cpu_pf${pf}_$round.json
done; done
echo "cpu $(( $(date +%s) - S )) s"
for t in s25m s25v; do for row in paged16_hostidx_b32_h32_kv8_q1_k4096_d128 paged256_hostidx_b32_h32_kv8_q1_k4096_d128 contiguous_b8_h32_kv8_q1_k8192_d128 paged16_hostidx_b8_h32_kv8_q1_k8192_d128; do
  (cd /tmp/$t && timeout 60 ncu --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active -k regex:fattn_decode --csv bin/bench "cuda_paged_decode_bf16/$row\$" \
    --bench --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10 --noplot > $R/ncu_${t}_$row.csv 2>/dev/null)
  python3 - $R/ncu_${t}_$row.csv $t $row <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] in ("gpu__time_duration.sum", "launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active"):
        d[(r[4][:40], r[-3][:24])].append(float(r[-1].replace(",", "")))
for k, v in sorted(d.items()):
    print(sys.argv[2], sys.argv[3], k[0], k[1], len(v), "median", statistics.median(v))
PY
done; done
echo "ncu $(( $(date +%s) - S )) s"
echo "total $(( $(date +%s) - S )) s"
