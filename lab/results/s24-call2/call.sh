# Session 24, call 2 (H200): the sm_90a build of the f16/bf16 decode split kernels, which
# release the combine launch as they start (griddepcontrol.launch_dependents), pack h90-s24t,
# against h90-s23c (main's kernels, 6efdbf9). Decode tests (both generations, the paged test's
# new case rotation) and the three sanitizers of the sanitizer subset on s24t, the decode rows
# alternating s23c / s24t 3 rounds, torch's decode rows in the same call.
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
for t in s23c s24t; do mkdir -p /tmp/$t && tar -xJf device-pack/h90-$t-9.tar.xz -C /tmp/$t || exit 1; done
cd /tmp/s24t; head -3 COMMIT
export FUSED_ATTN_BENCH_CUDA_ONLY=1
for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do timeout 120 bin/gpu $t --exact --nocapture; echo "$t rc=$?"; done > $R/tests.log 2>&1
grep -E "rc=|cases ×|test result|panicked" $R/tests.log | cut -c1-200
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_$tool.log | tail -2
done
echo "tests $(( $(date +%s) - S )) s"
for r in 1 2 3; do for t in s23c s24t; do
  CRITERION_HOME=/tmp/crit-$t-$r timeout 60 /tmp/$t/bin/bench 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/ab_${t}_$r.log 2>&1
  medians /tmp/crit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
echo "ab $(( $(date +%s) - S )) s"; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
mkdir -p $R/decode; timeout 60 python3 $L/scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; echo "torchd rc=$?"
grep -E "^\| decode" $R/decode/bench_torch.md | cut -d'|' -f3,4,5,8
echo "total $(( $(date +%s) - S )) s"
rm -f $R/ab_*.log
tar -czf $OUT/r.tgz -C $OUT r
