# Session 60, call 1 (pack s59c = the shipped kernels; an H200): where ours waits on the
# unmasked d128 rows, instruction by instruction. Session 59 (call 1) had ours at 3.22 warps
# stalled at barriers per issue against cuDNN's 1.42 and "wait" 1.61 against 0.90; which
# barriers (the ping-pong turns, the K/V full mbarriers, the producer's idle warps) needs
# SASS-level stall sampling: ncu SourceCounters (clocks free, one launch after 20), then the
# source page as CSV, for ours on the 2048 and 16k rows and for cuDNN's kernel on the 2048 row.
# PREDICTION: most of ours' barrier samples sit on the consumers' ping-pong turn barriers
# (BAR.SYNC before each GEMM issue), and the producer's 3 idle warps hold a part of the rest.
. lab/decode/check_ab.sh
P=s59c
prof() {  # NAME CMD...
  local name=$1; shift
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SchedulerStats \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    --import-source yes -o "$R/$name" "$@" > "$R/$name.log" 2>&1
  echo "$name rc=$?"
  ncu -i "$R/$name.ncu-rep" --page source --csv --print-source sass > "$R/${name}_sass.csv" 2> "$R/${name}_sass.err"
  echo "$name source rc=$? $(wc -l < "$R/${name}_sass.csv") lines"; head -c 600 "$R/${name}_sass.err"
  head -2 "$R/${name}_sass.csv" | cut -c1-1500
  ncu -i "$R/$name.ncu-rep" --page details --print-details all > "$R/${name}_details.txt" 2>&1
  grep -E "Duration|SM Frequency|Warp Cycles Per Issued|Issued Ipc|hmma|stall" "$R/${name}_details.txt" | head -20
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  local B="--bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot"
  (cd /tmp/$P && prof ours2048 --kernel-name regex:fattn_fwd --launch-skip 20 --launch-count 1 \
     bin/bench "cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128\$" $B)
  (cd /tmp/$P && prof ours16k --kernel-name regex:fattn_fwd --launch-skip 5 --launch-count 1 \
     bin/bench "cuda_fused_attn_bf16/b1_h32_kv32_q16384_k16384_d128\$" $B)
  prof cudnn2048 --kernel-name regex:"fprop|flash|cudnn" --launch-skip 20 --launch-count 1 \
     python3 "$L/lab/results/s46-call6/cudnn_row.py" 16 16 16 2048 2048 128 0 0.2
  ls -la "$R"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
