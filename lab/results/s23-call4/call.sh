# Session 23, call 4 (H200): the decode split rule (src/cuda/heuristics.rs split_keys) after
# calls 2-3 made the split blocks leaner and the combine cheaper: FUSED_ATTN_DECODE_SPLITS
# variants on the two decode rows still short of cuDNN, 3 rounds alternating, pack h90-s23b
# (63920c1's kernels); then ncu --set full of the 2048 row's split kernel on that pack.
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
export FUSED_ATTN_BENCH_CUDA_ONLY=1
PACK=device-pack/h90-s23b-9.tar.xz DS_FILTER='cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048' DS_VARIANTS="auto 8 12 20 24 32" timeout 200 bash lab/hopper/device.sh dsbench > /dev/null 2>&1
mv $R/dsbench_medians.txt $R/ds2048_medians.txt
PACK=device-pack/h90-s23b-9.tar.xz DS_FILTER='cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096' DS_VARIANTS="auto 2 3" timeout 150 bash lab/hopper/device.sh dsbench > /dev/null 2>&1
mv $R/dsbench_medians.txt $R/ds4096_medians.txt
echo "ds $(( $(date +%s) - S )) s"
for f in $R/ds2048_medians.txt $R/ds4096_medians.txt; do
  python3 - "$f" <<'PY'
import sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split()
    d[(parts[2], parts[0])].append(float(parts[3]))
for (row, v), xs in sorted(d.items()):
    print(row, v, ' '.join(f'{x:.2f}' for x in xs), 'min', f'{min(xs):.2f}')
PY
done
cd /tmp/h90
timeout 120 ncu --set full --import-source no -k 'regex:^fattn_decode_bf16_d128$' --launch-skip 8 -c 1 -f -o /tmp/src_s2048 bin/bench \
  'cuda_decode_layout_bf16/bshd_b1_h32_kv8_q1_k2048_d128' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/run_s2048.log 2>&1
ncu -i /tmp/src_s2048.ncu-rep --page details > $R/details_split2048.txt 2>&1
ncu -i /tmp/src_s2048.ncu-rep --page source --csv --print-source sass > $R/sass_split2048.csv 2>&1
grep -E "Duration|DRAM Throughput|Executed Instructions  |Elapsed Cycles" $R/details_split2048.txt | head -5
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
