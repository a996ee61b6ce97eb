# Session 22, call 4 (H200): the cluster split kernels with the SPREAD scheduling policy and only where every cluster of the launch fits at once.
# A smoke run first (a cluster barrier protocol gone wrong hangs: stop early), then every
# decode test (both generations), memcheck and racecheck of the sanitizer subset, then the
# decode rows alternating clusters on / off (FUSED_ATTN_DECODE_CLUSTER=off: the combine
# launch, as HEAD 34628a3), 3 rounds, then torch's decode rows in the same call.
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
mkdir -p /tmp/h90 && tar -xJf device-pack/h90-s22d-9.tar.xz -C /tmp/h90 && cd /tmp/h90 || exit 1
export FUSED_ATTN_BENCH_CUDA_ONLY=1
CRITERION_HOME=/tmp/crit-smoke timeout 60 bin/bench 'cuda_decode_layout_bf16/bshd_b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/smoke.log 2>&1
rc=$?; echo "smoke rc=$rc"; medians /tmp/crit-smoke
if [ $rc -ne 0 ]; then tail -20 $R/smoke.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; fi
for t in gpu_decode gpu_varlen_paged_decode; do timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"; done > $R/tests.log 2>&1
grep -E "rc=|cases ×|test result|panicked" $R/tests.log | cut -c1-260
for tool in memcheck; do timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_$tool.log | tail -2; done
echo "tests $(( $(date +%s) - S )) s"
for r in 1 2 3; do for mode in on off; do
  FUSED_ATTN_DECODE_CLUSTER=$mode CRITERION_HOME=/tmp/crit-$mode-$r timeout 120 bin/bench 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/ab_${mode}_$r.log 2>&1
  medians /tmp/crit-$mode-$r | sed "s/^/pack=cluster-$mode round=$r /" >> $R/ab_medians.txt
done; done
echo "ab $(( $(date +%s) - S )) s"; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
mkdir -p $R/decode; timeout 120 python3 scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; echo "torchd rc=$?"
grep -E "^\| decode" $R/decode/bench_torch.md | cut -d'|' -f3,4,5,8 
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
