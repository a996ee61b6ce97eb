# Session 60, call 2 (pack s60a; an H200): the profile of the rows short of the FlashAttention-3
# paper's figures (call 1, same GPU type: d128 16k 623 TF/s = 0.96x 648, d256 16k 707 = 0.955x
# 740; d64 16k 507 = 1.02x 497): ours (the wide instances: 176-key blocks at d128, 80 at d256)
# and cuDNN's kernel on (1,16,16,16384,16384,128) and (1,8,8,16384,16384,256), ncu clocks free,
# SourceCounters + WarpStateStats + the tensor pipe, one launch each; then the first launches
# of the bench's (1,32,32,16384,16384,128) row by name (call 1's "ours16k" profile, launch 6,
# was the plain d128 instance on a grid of 132 with 815k cycles: not that row's kernel).
# PREDICTION: ours' tensor pipe 75-80% active on both rows (cuDNN's lower: it runs slower);
# the loop's stalls the wgmma waits and MUFU waits as at 2048 keys; the first launches of
# the bench are the bench's own check at a smaller shape, then the wide instance.
. lab/decode/check_ab.sh
P=s60a
prof() {  # NAME CMD...
  local name=$1; shift
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SchedulerStats \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
    --import-source yes -o "/tmp/$name" "$@" > "$R/$name.log" 2>&1
  echo "$name rc=$?"
  ncu -i "/tmp/$name.ncu-rep" --page source --csv --print-source sass 2> "$R/${name}_sass.err" | gzip -9 > "$R/${name}_sass.csv.gz"
  ncu -i "/tmp/$name.ncu-rep" --page details --print-details all > "$R/${name}_details.txt" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Elapsed Cycles|hmma|Registers Per|Warp Cycles Per Issued|Active Warps Per" "$R/${name}_details.txt" | head -14
  python3 "$L/lab/tools/sass_stalls.py" "$R/${name}_sass.csv.gz" | head -16
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  local B="--bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot"
  (cd /tmp/$P && timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --launch-count 8 \
     bin/bench "cuda_fused_attn_bf16/b1_h32_kv32_q16384_k16384_d128\$" $B > "$R/first_launches.log" 2>&1
   echo "first launches rc=$?"; grep -E "^  [a-z_]+.*\(|gpu__time|launch__grid" "$R/first_launches.log" | head -30)
  (cd /tmp/$P && prof ours_d128_16k --kernel-name regex:wide --launch-skip 3 --launch-count 1 \
     bin/bench "cuda_fused_attn_fa3_bf16/b1_h16_kv16_q16384_k16384_d128\$" $B)
  (cd /tmp/$P && prof ours_d256_16k --kernel-name regex:wide --launch-skip 3 --launch-count 1 \
     bin/bench "cuda_fused_attn_fa3_bf16/b1_h8_kv8_q16384_k16384_d256\$" $B)
  prof cudnn_d128_16k --kernel-name regex:"fprop|flash|cudnn" --launch-skip 5 --launch-count 1 \
     python3 "$L/lab/results/s46-call6/cudnn_row.py" 1 16 16 16384 16384 128 0 0.2
  prof cudnn_d256_16k --kernel-name regex:"fprop|flash|cudnn" --launch-skip 5 --launch-count 1 \
     python3 "$L/lab/results/s46-call6/cudnn_row.py" 1 8 8 16384 16384 256 0 0.2
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
