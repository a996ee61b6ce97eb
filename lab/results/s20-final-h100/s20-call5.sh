# Session 20, call 5: the TMA descriptors prefetched before the barriers' set-up (s20e) against
# f3a5841 (s20b) on the small and 2048 d64/d128 rows, 3 rounds; then the final table on s20b
# (bench, torch prefill and decode, cold start).
R=$OUT/r; mkdir -p $R; S=$(date +%s)
mkdir -p /tmp/t-e && tar -xJf device-pack/h90-s20e-9.tar.xz -C /tmp/t-e
timeout 90 /tmp/t-e/bin/gpu gpu_hopper_prefill --exact --nocapture > $R/tests_e.log 2>&1; echo "s20e hopper rc=$?"; grep -E "cases|test result" $R/tests_e.log | cut -c1-200
AB_FILTER='cuda_fused_attn_bf16/b(1_h8_kv8_q512|16_h16_kv16_q2048_k2048_d(64|128))' ROUNDS=3 timeout 300 bash lab/hopper/ab.sh device-pack/h90-s20b-9.tar.xz device-pack/h90-s20e-9.tar.xz > /dev/null 2>&1
echo "ab $(( $(date +%s) - S )) s"; python3 lab/hopper/ab_table.py $R/ab_medians.txt
PACK=device-pack/h90-s20b-9.tar.xz BENCH_KINDS=auto bash lab/hopper/device.sh bench torch torchd coldstart > /dev/null 2>&1
cat $R/steps.txt; cd /work 2>/dev/null; echo "total $(( $(date +%s) - S )) s"
