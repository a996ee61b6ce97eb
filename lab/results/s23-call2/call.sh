# Session 23, call 2 (H200): the lean decode split kernel (full 16-key tiles copied with
# per-thread pointer steps; accumulators rescaled only when a row max moved) and the combine
# launch with 4-partial batches, pack h90-s23a, against main (h90-s23m). Smoke, decode tests
# (both generations), memcheck and racecheck of the sanitizer subset, then the decode rows
# alternating the two packs 3 rounds, torch's decode rows, and ncu of the new split kernel
# (32×4096) and combine (2048) as in call 1.
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
for t in s23m s23a; do mkdir -p /tmp/$t && tar -xJf device-pack/h90-$t-9.tar.xz -C /tmp/$t || exit 1; done
cd /tmp/s23a; cat COMMIT | head -3
export FUSED_ATTN_BENCH_CUDA_ONLY=1
CRITERION_HOME=/tmp/crit-smoke timeout 60 bin/bench 'cuda_decode_layout_bf16/bshd_b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/smoke.log 2>&1
rc=$?; echo "smoke rc=$rc"; medians /tmp/crit-smoke
if [ $rc -ne 0 ]; then tail -20 $R/smoke.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; fi
for t in gpu_decode gpu_varlen_paged_decode gpu_lse gpu_varlen_matches_dense_per_sequence gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_nan_in_a_query_row_stays_in_that_row; do timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"; done > $R/tests.log 2>&1
grep -E "rc=|cases ×|test result|panicked" $R/tests.log | cut -c1-260
for tool in memcheck racecheck; do timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_$tool.log | tail -2; done
timeout 150 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_varlen --exact --nocapture > $R/san_memcheck_varlen.log 2>&1; echo "memcheck varlen rc=$?"; grep -E "SUMMARY|test result" $R/san_memcheck_varlen.log | tail -2
echo "tests $(( $(date +%s) - S )) s"
for r in 1 2 3; do for t in s23m s23a; do
  CRITERION_HOME=/tmp/crit-$t-$r timeout 120 /tmp/$t/bin/bench 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/ab_${t}_$r.log 2>&1
  medians /tmp/crit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
done; done
echo "ab $(( $(date +%s) - S )) s"; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
mkdir -p $R/decode; timeout 120 python3 $L/scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; echo "torchd rc=$?"
grep -E "^\| decode" $R/decode/bench_torch.md | cut -d'|' -f3,4,5,8
prof() {  # TAG KERNEL_REGEX SKIP ROW
  timeout 120 ncu --set full --import-source no -k "regex:$2" --launch-skip "$3" -c 1 -f -o /tmp/src_$1 bin/bench \
    "cuda_decode_layout_bf16/$4" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/run_$1.log 2>&1
  ncu -i /tmp/src_$1.ncu-rep --page details > $R/details_$1.txt 2>&1
  ncu -i /tmp/src_$1.ncu-rep --page source --csv --print-source sass > $R/sass_$1.csv 2>&1
  grep -E "Duration|DRAM Throughput|Executed Instructions  |Elapsed Cycles" $R/details_$1.txt | sed "s/^/$1: /" | head -6
}
prof split '^fattn_decode_bf16_d128$' 8 bshd_b32_h32_kv8_q1_k4096_d128
prof combine '^fattn_decode_combine_bf16_d128$' 8 bshd_b1_h32_kv8_q1_k2048_d128
prof split8192 '^fattn_decode_bf16_d128$' 8 bshd_b8_h32_kv8_q1_k8192_d128
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
