# Session 20, call 7: HEAD (125f866, pack s20c) through the whole GPU test binary, memcheck and
# racecheck of gpu_sanitizer_subset; then ncu kernel durations of the (1,32,8,1,2048,128)
# decode row, ours (split kernel + combine) and torch's cuDNN / FA2 at the same shape.
R=$OUT/r; mkdir -p $R; S=$(date +%s)
PACK=device-pack/h90-s20c-9.tar.xz bash lab/hopper/device.sh all > /dev/null 2>&1
cat $R/steps.txt; grep -E "^test result|FAILED|panicked" $R/all.log | head -5
for tool in memcheck racecheck; do timeout 150 compute-sanitizer --tool $tool /tmp/h90/bin/gpu gpu_sanitizer_subset --exact --nocapture > $R/san_$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|test result" $R/san_$tool.log | tail -2; done
echo "tests+san $(( $(date +%s) - S )) s"
cd /tmp/h90 && timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum \
  --kernel-name regex:fattn_decode --launch-skip 4 --launch-count 6 \
  bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048' --bench --warm-up-time 0.2 --measurement-time 0.5 --sample-size 10 --noplot > $R/ncu_ours.txt 2>&1
cd - > /dev/null
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum python3 lab/decode/sdpa2048.py > $R/ncu_torch.txt 2>&1
grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration" $R/ncu_ours.txt | head -24
grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration|backend done" $R/ncu_torch.txt | head -40
echo "total $(( $(date +%s) - S )) s"; tar -czf $OUT/r.tgz -C $OUT r
