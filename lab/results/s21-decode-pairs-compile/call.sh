# Next session's device call for the pairs A/B (device tool, carry device-pack; ~6 min):
# correctness of s21p on every decode test and memcheck + racecheck, then the decode rows
# alternating s21a / s21p, 3 rounds.
R=$OUT/r; mkdir -p $R; S=$(date +%s)
mkdir -p /tmp/t-p && tar -xJf device-pack/h90-s21p-9.tar.xz -C /tmp/t-p
for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do timeout 120 /tmp/t-p/bin/gpu $t --exact --nocapture; echo "s21p $t rc=$?"; done > $R/tests_p.log 2>&1
grep -E "rc=|cases|test result|panicked" $R/tests_p.log | cut -c1-160
for tool in memcheck racecheck; do timeout 120 compute-sanitizer --tool $tool /tmp/t-p/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_${tool}_p.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_${tool}_p.log | tail -2; done
echo "tests $(( $(date +%s) - S )) s"
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 timeout 400 bash lab/hopper/ab.sh device-pack/h90-s21a-9.tar.xz device-pack/h90-s21p-9.tar.xz > /dev/null 2>&1
echo "ab $(( $(date +%s) - S )) s"; python3 lab/hopper/ab_table.py $R/ab_medians.txt
tar -czf $OUT/r.tgz -C $OUT r
