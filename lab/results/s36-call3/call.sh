# Session 36 call 3 (inline command, recorded here): issue 13's GPU rows on main's kernels
# (pack s35u, full): criterion cuda_varlen_bf16 and cuda_paged_decode_bf16, 2 rounds, then
# torch's FA2 varlen (scripts/bench_torch_varlen.py) on the same batch, same call.
R=$OUT/r; mkdir -p $R; . lab/medians.sh; W=/tmp/s35u
[ -d $W/bin ] || { mkdir -p $W && tar -xJf device-pack/h90-s35u-9.tar.xz -C $W; }
head -1 $W/COMMIT; export FUSED_ATTN_BENCH_CUDA_ONLY=1
for r in 1 2; do
  (cd $W && CRITERION_HOME=/tmp/vcrit-$r timeout 150 bin/bench 'cuda_(varlen|paged_decode)_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/vbench_$r.log 2>&1)
  echo "vbench $r rc=$?"; medians /tmp/vcrit-$r | sed "s/^/round=$r /" | tee -a $R/vmedians.txt
done
(cd $W && timeout 150 python3 scripts/bench_torch_varlen.py --out $R > $R/torch_varlen.log 2>&1); echo "torch varlen rc=$?"
tail -12 $R/torch_varlen.log
