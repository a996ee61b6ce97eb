P=device-pack/h90-s19a-9.tar.xz; W=/tmp/w; R=$OUT/r; mkdir -p $W $R; tar -xJf $P -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
for t in gpu_decode gpu_varlen_paged_decode gpu_lse gpu_output_poisoned gpu_sanitizer_subset gpu_errors; do timeout 240 $W/bin/gpu $t --exact --nocapture; done > $R/tests.log 2>&1
grep -E "cases|test result|panicked|FAIL|SKIPPED|merges" $R/tests.log | head -30
for tool in memcheck racecheck synccheck; do timeout 200 compute-sanitizer --tool $tool $W/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result|Internal" $R/san_$tool.log | tail -3; done
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 bash lab/hopper/envab.sh $P FUSED_ATTN_CUDA_KERNELS "auto sm80" > /dev/null 2>&1
cat $R/envab_medians.txt
mkdir -p $R/decode; cp -r $W/scripts /tmp/sc; timeout 300 python3 $W/scripts/bench_torch.py --out $R/decode --rep-ms 100 --only decode > $R/torchd.log 2>&1; tail -8 $R/torchd.log
tar -czf $OUT/r.tgz -C $OUT r
