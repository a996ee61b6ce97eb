# Session 60, call 1 (pack s60a = the shipped kernels of s59c and the bench's FA3 rows; an
# H200). First, the FlashAttention-3 paper's non-causal 16k shapes (hidden 2048: (1,32,16384,
# d64), (1,16,16384,d128), (1,8,16384,d256)), ours between two torch runs (FA2, cuDNN), 3
# rounds of ours: issue 14 asks for the ratio to the paper's figures, which sessions 13-59
# gave at 2048 keys for d64 and d256. PREDICTION: d64 ~470-490 TF/s (its 2048 row 458-465),
# d128 ~620, d256 ~640-660 (0.86-0.89x 740), each at or above cuDNN.
# Then: where ours waits on the
# unmasked d128 rows, instruction by instruction. Session 59 (call 1) had ours at 3.22 warps
# stalled at barriers per issue against cuDNN's 1.42 and "wait" 1.61 against 0.90; which
# barriers (the ping-pong turns, the K/V full mbarriers, the producer's idle warps) needs
# SASS-level stall sampling: ncu SourceCounters (clocks free, one launch after 20), then the
# source page as CSV, for ours on the 2048 and 16k rows and for cuDNN's kernel on the 2048 row.
# PREDICTION: most of ours' barrier samples sit on the consumers' ping-pong turn barriers
# (BAR.SYNC before each GEMM issue), and the producer's 3 idle warps hold a part of the rest.
. lab/decode/check_ab.sh
P=s60a
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
fa3_torch() {
  timeout 120 python3 "$L/scripts/bench_torch.py" --out "$R/fa3_torch$1" --rep-ms 100 --only fa3 > "$R/fa3_torch$1.log" 2>&1
  echo "torch fa3 run $1 rc=$?"; grep -E "^  prefill" "$R/fa3_torch$1.log"
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  local r
  fa3_torch 1
  for r in 1 2 3; do
    CRITERION_HOME=/tmp/crit-fa3-$r timeout 120 /tmp/$P/bin/bench cuda_fused_attn_fa3_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/fa3_ours$r.log" 2>&1
    echo "ours fa3 round $r rc=$?"; medians /tmp/crit-fa3-$r | tee "$R/fa3_medians$r.txt"
  done
  fa3_torch 2
  echo "elapsed $(( $(date +%s) - S0 )) s"
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
