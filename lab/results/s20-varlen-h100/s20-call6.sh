# Session 20, call 6: issue 13's GPU rows again on f3a5841 (pack s20b): the packed batch
# against PyTorch's FA2 varlen (vbench: ours auto and sm80, torch) and paged decode against
# contiguous decode (cuda_paged_decode_bf16, 2 rounds).
R=$OUT/r; mkdir -p $R; S=$(date +%s)
PACK=device-pack/h90-s20b-9.tar.xz bash lab/hopper/device.sh vbench > /dev/null 2>&1
cat $R/steps.txt; cat $R/vmedians_auto.txt $R/vmedians_sm80.txt; tail -6 $R/torch_varlen.log
. lab/medians.sh
for r in 1 2; do CRITERION_HOME=/tmp/h90/pcrit-$r timeout 150 /tmp/h90/bin/bench cuda_paged_decode_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/paged_$r.log 2>&1; medians /tmp/h90/pcrit-$r | sed "s/^/round=$r /" | tee -a $R/paged_medians.txt; done
echo "total $(( $(date +%s) - S )) s"; tar -czf $OUT/r.tgz -C $OUT r
