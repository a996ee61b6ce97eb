# Session 22, call 1 (first on an H200): the per-pair decode partials (s21p, pairs.diff of
# lab/results/s21-decode-pairs-compile) — correctness on every decode test, memcheck and
# racecheck — then the decode rows alternating s21a (HEAD 34628a3) / s21p, 3 rounds; then the
# same-run table on s21a (bench, torch prefill and decode, cold start): the H200 baseline.
R=$OUT/r; mkdir -p $R; S=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
mkdir -p /tmp/t-p && tar -xJf device-pack/h90-s21p-9.tar.xz -C /tmp/t-p
for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do timeout 120 /tmp/t-p/bin/gpu $t --exact --nocapture; echo "s21p $t rc=$?"; done > $R/tests_p.log 2>&1
grep -E "rc=|test result|panicked" $R/tests_p.log | cut -c1-160
for tool in memcheck racecheck; do timeout 120 compute-sanitizer --tool $tool /tmp/t-p/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_${tool}_p.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_${tool}_p.log | tail -2; done
echo "tests $(( $(date +%s) - S )) s"
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 timeout 240 bash lab/hopper/ab.sh device-pack/h90-s21a-9.tar.xz device-pack/h90-s21p-9.tar.xz > /dev/null 2>&1
echo "ab $(( $(date +%s) - S )) s"; python3 lab/hopper/ab_table.py $R/ab_medians.txt
PACK=device-pack/h90-s21a-9.tar.xz BENCH_KINDS=auto timeout 230 bash lab/hopper/device.sh bench torch torchd coldstart > /dev/null 2>&1
cat $R/steps.txt; echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
