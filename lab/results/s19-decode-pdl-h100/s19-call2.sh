# Session 19, call 2: the combine spread over its tile's merge rounds (pack s19b): correctness,
# then auto (separate combine) against sm80 (in-kernel merge) on the decode rows, 3 rounds, and
# the split counts with the separate combine on the two 8-tile rows.
P=device-pack/h90-s19b-9.tar.xz; W=/tmp/w; R=$OUT/r; mkdir -p $W $R; tar -xJf $P -C $W
for t in gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sanitizer_subset; do timeout 240 $W/bin/gpu $t --exact --nocapture; done > $R/tests.log 2>&1
grep -E "cases|test result|panicked|FAIL|SKIPPED" $R/tests.log | head -30
timeout 200 compute-sanitizer --tool memcheck $W/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_memcheck.log 2>&1; grep -E "SUMMARY" $R/san_memcheck.log
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 bash lab/hopper/envab.sh $P FUSED_ATTN_CUDA_KERNELS "auto sm80" > /dev/null 2>&1
cat $R/envab_medians.txt
for r in 1 2; do for ds in auto 24 32; do
  if [ $ds = auto ]; then unset FUSED_ATTN_DECODE_SPLITS; else export FUSED_ATTN_DECODE_SPLITS=$ds; fi
  CRITERION_HOME=$W/ds-$ds-$r timeout 100 $W/bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q[14]_k(2048|32768|8192)' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > /dev/null 2>&1
  . lab/medians.sh; medians $W/ds-$ds-$r | sed "s/^/splits=$ds round=$r /" | tee -a $R/ds_medians.txt
done; done
mkdir -p $R/decode; timeout 300 python3 $W/scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; grep decode $R/decode/bench_torch.md
tar -czf $OUT/r.tgz -C $OUT r
