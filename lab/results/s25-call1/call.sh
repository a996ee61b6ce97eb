# Session 25 call 1 (prepared in session 24 as s24-next/call.sh; the A/B filtered to the three rows of the bar): the paged staging diff
# (pack h90-s25p: `git apply lab/results/s24-next/staging.diff; lab/pack-h90.sh s25p`) against
# main (pack h90-s25m), both recompressed to device-pack/h90-TAG-9.tar.xz.
# 1. decode tests and memcheck on s25p; 2. cuda_paged_decode_bf16 alternating, 3 rounds;
# 3. kernel-only durations (ncu gpu__time_duration) of the decode launches of three rows on
#    main's pack, to split the paged call's fixed cost into kernel and index upload.
export FUSED_ATTN_BENCH_CUDA_ONLY=1
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/decode/check_ab.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
decode_tests s25p memcheck
echo "tests $(( $(date +%s) - S )) s"
unpack s25m
for r in 1 2 3; do for t in s25m s25p; do
  CRITERION_HOME=/tmp/pcrit-$t-$r timeout 100 /tmp/$t/bin/bench 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_hostidx)' --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > /tmp/pab_${t}_$r.log 2>&1
  medians /tmp/pcrit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
echo "ab $(( $(date +%s) - S )) s"
cd /tmp/s25m
for row in contiguous_b32_h32_kv8_q1_k4096_d128 paged16_hostidx_b32_h32_kv8_q1_k4096_d128 paged256_hostidx_b32_h32_kv8_q1_k4096_d128; do
  timeout 120 ncu --metrics gpu__time_duration.sum -k regex:fattn_decode --csv bin/bench "cuda_paged_decode_bf16/$row\$" \
    --bench --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10 --noplot > $R/ncu_$row.csv 2>/dev/null
  python3 - $R/ncu_$row.csv $row <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] == "gpu__time_duration.sum":
        d[r[4]].append(float(r[-1].replace(",", "")))
for k, v in d.items():
    print(sys.argv[2], k[:40], len(v), "launches, median", statistics.median(v), "(ns or us as ncu printed)")
PY
done
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
