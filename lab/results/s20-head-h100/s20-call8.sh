# Session 20, call 8: the combine's per-warp partials spread over more lanes (4 partials a lane,
# s20d) against HEAD (s20c): correctness, then the decode rows alternating, 3 rounds.
R=$OUT/r; mkdir -p $R; S=$(date +%s)
mkdir -p /tmp/t-d && tar -xJf device-pack/h90-s20d-9.tar.xz -C /tmp/t-d
for t in gpu_decode gpu_varlen_paged_decode; do timeout 120 /tmp/t-d/bin/gpu $t --exact --nocapture; echo "s20d $t rc=$?"; done > $R/tests_d.log 2>&1
grep -E "rc=|cases|test result|panicked" $R/tests_d.log | cut -c1-160
timeout 60 compute-sanitizer --tool memcheck /tmp/t-d/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_memcheck_d.log 2>&1; echo "memcheck rc=$?"; grep -E "SUMMARY" $R/san_memcheck_d.log
echo "tests $(( $(date +%s) - S )) s"
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 timeout 300 bash lab/hopper/ab.sh device-pack/h90-s20c-9.tar.xz device-pack/h90-s20d-9.tar.xz > /dev/null 2>&1
python3 lab/hopper/ab_table.py $R/ab_medians.txt
echo "total $(( $(date +%s) - S )) s"; tar -czf $OUT/r.tgz -C $OUT r
