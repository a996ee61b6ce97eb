# Session 24, call 3 (H200): the wide d128 instance (176-key blocks) at 2048 and 4096 keys,
# where the padding rule (WIDE_PADDING 1.02) keeps the plain one: FUSED_ATTN_SM90_WIDE_PADDING
# unset against 1.04, alternating, 3 rounds, pack h90-s24w (HEAD 87189cd + the knob); torch's
# prefill rows in the same call; then the whole GPU test binary and the torch float64 oracle on
# that pack (not run on the H200 since session 20's H100 runs).
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
export FUSED_ATTN_BENCH_CUDA_ONLY=1
ROUNDS=3 AB_FILTER='cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048|4_h32_kv32_q4096_k4096|4_h32_kv4_q4096_k4096)_d128$' \
  bash $L/lab/hopper/envab.sh $L/device-pack/h90-s24w-9.tar.xz FUSED_ATTN_SM90_WIDE_PADDING "unset 1.04" > /dev/null 2>&1
sed "s/^FUSED_ATTN_SM90_WIDE_PADDING=/pack=/" $R/envab_medians.txt > $R/ab_medians.txt; python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
echo "envab $(( $(date +%s) - S )) s"
timeout 150 python3 $L/scripts/bench_torch.py --out $R --rep-ms 100 --only prefill > $R/torch.log 2>&1; echo "torch rc=$?"
grep -E "^\| prefill \| \([^)]*,128\) \| none" $R/bench_torch.md | cut -d'|' -f3,4,5,8
echo "torch $(( $(date +%s) - S )) s"
cd /tmp/envab
timeout 250 bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > $R/all.log 2>&1; echo "all rc=$?"
grep -E "^test result|FAILED|SKIPPED|panicked" $R/all.log | head -20
echo "all $(( $(date +%s) - S )) s"
timeout 90 python3 scripts/torch_oracle.py --out /tmp/oracle > $R/oracle.log 2>&1; echo "oracle gen rc=$?"
FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 90 bin/gpu gpu_torch_oracle --exact --nocapture >> $R/oracle.log 2>&1; echo "oracle rc=$?"
grep -E "cases|test result|SKIPPED|panicked" $R/oracle.log | head
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
