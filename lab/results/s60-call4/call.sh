# Session 60, call 4 (pack s60b, whose bench runs only the rows its filter keeps; an H200):
# the profiles call 2 missed: ours' wide d256 kernel on (1,8,8,16384,16384,256) (the FA3
# paper's d256 shape, 0.955x its 740 TF/s) and ours on issue 14's (1,32,32,16384,16384,128)
# row, ncu clocks free, SourceCounters, one launch each after 3.
# PREDICTION: d256 tensor pipe ~84% (as cuDNN's kernel, which ours beats by 5.5% in time);
# the 16k d128 row as call 2's 16-head one (76-77%).
. lab/decode/check_ab.sh
P=s60b
prof() {  # NAME CMD...
  local name=$1; shift
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
    --import-source yes -o "/tmp/$name" "$@" > "$R/$name.log" 2>&1
  echo "$name rc=$?"
  ncu -i "/tmp/$name.ncu-rep" --page source --csv --print-source sass 2> "$R/${name}_sass.err" | gzip -9 > "$R/${name}_sass.csv.gz"
  ncu -i "/tmp/$name.ncu-rep" --page details --print-details all > "$R/${name}_details.txt" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|Elapsed Cycles|hmma|Registers Per|Active Warps Per" "$R/${name}_details.txt" | head -8
  python3 "$L/lab/tools/sass_stalls.py" "$R/${name}_sass.csv.gz" | head -14
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  local B="--bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot"
  (cd /tmp/$P && prof ours_d256_16k --kernel-name regex:d256_wide --launch-skip 3 --launch-count 1 \
     bin/bench "cuda_fused_attn_fa3_bf16/b1_h8_kv8_q16384_k16384_d256\$" $B)
  (cd /tmp/$P && prof ours_d128_16k32 --kernel-name regex:d128_wide --launch-skip 3 --launch-count 1 \
     bin/bench "cuda_fused_attn_bf16/b1_h32_kv32_q16384_k16384_d128\$" $B)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
