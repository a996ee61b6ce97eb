# Session 59, call 1: session 58's call 6 script (written then, not run), unchanged but for this line.
# Session 58, call 6 (pack s58a, an H200): where the ~1% of extra cycles on the unmasked d128
# rows go (call 5: ours 1 418k cycles against cuDNN's kernel's 1 408k at 2048 keys). ncu with
# clocks free, one launch each after 20, the sections WarpStateStats, SchedulerStats and
# ComputeWorkloadAnalysis plus the tensor pipe, of ours and of cuDNN's kernel on the 2048 row.
# For the next session's plan; no kernel changes this session.
# PREDICTION: both kernels' consumer warps mostly stalled on the wgmma wait (math pipe
# throttle / wait), ours with fewer issued instructions per cycle and a larger share of
# barrier stalls (the ping-pong's named barriers).
. lab/decode/check_ab.sh
P=s58a
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  local S="--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
  (cd /tmp/$P && timeout 120 ncu --clock-control none $S --kernel-name regex:fattn_fwd --launch-skip 20 --launch-count 1 \
     bin/bench "cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128\$" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_ours.txt" 2>&1)
  echo "ours rc=$?"; grep -vE "^==PROF==|^ *$|^Benchmarking|^cuda_fused|time: |^Found|outlier" "$R/ncu_ours.txt" | grep -E "^  [a-z]|stalled|Warp Cycles|Issued|Eligible|No Eligible|Executed Ipc|tensor|Ghz|duration" | head -70
  timeout 120 ncu --clock-control none $S --kernel-name regex:"fprop|flash|cudnn" --launch-skip 20 --launch-count 1 \
     python3 "$L/lab/results/s46-call6/cudnn_row.py" 16 16 16 2048 2048 128 0 0.2 > "$R/ncu_cudnn.txt" 2>&1
  echo "cudnn rc=$?"; grep -E "^  [a-z]|stalled|Warp Cycles|Issued|Eligible|No Eligible|Executed Ipc|tensor|Ghz|duration" "$R/ncu_cudnn.txt" | head -70
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
