# Session 20, call 1: K ahead of V (s20k: kfirst + per-warp decode partials; s20p: kfirst with
# 32/232 d128 producer registers + the persistent d256 with kfirst) against HEAD (s20a):
# correctness of both candidates first, then the prefill rows alternating, 2 rounds.
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
for t in s20k s20p; do W=/tmp/t-$t; mkdir -p $W; tar -xJf device-pack/h90-$t-9.tar.xz -C $W; done
S=$(date +%s)
for t in gpu_hopper_prefill gpu_lse gpu_decode gpu_varlen_paged_decode gpu_hopper_varlen; do timeout 120 /tmp/t-s20k/bin/gpu $t --exact --nocapture; echo "s20k $t rc=$?"; done > $R/tests_k.log 2>&1
for t in gpu_hopper_prefill gpu_lse; do timeout 120 /tmp/t-s20p/bin/gpu $t --exact --nocapture; echo "s20p $t rc=$?"; done > $R/tests_p.log 2>&1
echo "tests $(( $(date +%s) - S )) s"; grep -hE "rc=|cases|test result|panicked|FAIL|SKIPPED" $R/tests_k.log $R/tests_p.log | head -40
S=$(date +%s)
for t in s20k s20p; do timeout 120 compute-sanitizer --tool memcheck /tmp/t-$t/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_memcheck_$t.log 2>&1; echo "$t memcheck rc=$?"; grep -E "SUMMARY|test result" $R/san_memcheck_$t.log | tail -2; done
echo "memcheck $(( $(date +%s) - S )) s"
S=$(date +%s)
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q[0-9]{3,}' ROUNDS=2 timeout 330 bash lab/hopper/ab.sh device-pack/h90-s20a-9.tar.xz device-pack/h90-s20k-9.tar.xz device-pack/h90-s20p-9.tar.xz > /dev/null 2>&1
echo "ab $(( $(date +%s) - S )) s"
python3 lab/hopper/ab_table.py $R/ab_medians.txt 2>&1 | head -30
tar -czf $OUT/r.tgz -C $OUT r
