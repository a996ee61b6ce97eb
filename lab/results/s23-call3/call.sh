# Session 23, call 3 (H200): the combine launch waits for the split grid right before its
# first partial load (its index and address arithmetic overlaps the split kernel's end; no
# runtime divisions for sq = 1 or the lane count), pack h90-s23b, against h90-s23a (call 2's
# kernels, committed as 8582bf9). Decode tests (both generations), memcheck and synccheck of
# the sanitizer subset, the decode rows alternating s23a / s23b 3 rounds, then the same-call
# table on s23b: bench (every row), torch prefill and decode, cold start (sm_90 cubins).
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
for t in s23a s23b; do mkdir -p /tmp/$t && tar -xJf device-pack/h90-$t-9.tar.xz -C /tmp/$t || exit 1; done
cd /tmp/s23b; head -3 COMMIT
export FUSED_ATTN_BENCH_CUDA_ONLY=1
CRITERION_HOME=/tmp/crit-smoke timeout 60 bin/bench 'cuda_decode_layout_bf16/bshd_b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/smoke.log 2>&1
rc=$?; echo "smoke rc=$rc"; medians /tmp/crit-smoke
if [ $rc -ne 0 ]; then tail -20 $R/smoke.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; fi
for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"; done > $R/tests.log 2>&1
grep -E "rc=|cases ×|test result|panicked" $R/tests.log | cut -c1-260
for tool in memcheck synccheck; do timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_$tool.log | tail -2; done
echo "tests $(( $(date +%s) - S )) s"
for r in 1 2 3; do for t in s23a s23b; do
  CRITERION_HOME=/tmp/crit-$t-$r timeout 120 /tmp/$t/bin/bench 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/ab_${t}_$r.log 2>&1
  medians /tmp/crit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
echo "ab $(( $(date +%s) - S )) s"; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
cd $L; PACK=device-pack/h90-s23b-9.tar.xz BENCH_KINDS=auto timeout 260 bash lab/hopper/device.sh bench torch torchd coldstart > /dev/null 2>&1
cat $R/steps.txt; echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
