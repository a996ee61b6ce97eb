# Session 24, call 4 (H200): issue 13's GPU rows on the current kernels (pack h90-s24w, HEAD
# 87189cd + a host-only knob): criterion cuda_varlen_bf16 and cuda_paged_decode_bf16 (default
# kernels), then torch's FA2 varlen on the same batch. Last measured on an H100 (sessions 10,
# 20), before session 23's lean decode copies.
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
W=/tmp/w; mkdir -p $W && tar -xJf device-pack/h90-s24w-9.tar.xz -C $W || exit 1
cd $W
for r in 1 2; do
  CRITERION_HOME=$W/vcrit-$r timeout 150 bin/bench 'cuda_(varlen|paged_decode)_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/vbench_$r.log 2>&1; echo "vbench $r rc=$?"
  medians $W/vcrit-$r | sed "s/^/round=$r /" | tee -a $R/vmedians.txt
done
echo "vbench $(( $(date +%s) - S )) s"
timeout 150 python3 scripts/bench_torch_varlen.py --out $R > $R/torch_varlen.log 2>&1; echo "torch varlen rc=$?"
tail -12 $R/torch_varlen.log
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
