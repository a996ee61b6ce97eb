# Session 53 call 3: compute-sanitizer on the committed default (9a78de3, pack s53b): device-run.sh's
# sanitize stage (memcheck and racecheck of gpu_sanitizer_), synccheck of the subset and of the
# multicast test; then ncu of the two rows short of cuDNN in call 2, ours and cuDNN's kernel
# (the d128 2048 prefill row: clocks, issue, tensor pipe; the (32,32,8,1,4096) decode row:
# DRAM throughput, clocks).
# PREDICTION: every tool clean; decode: both kernels at 88-91% of DRAM peak within 1-2% of each
# other's duration (session 46); prefill: ours ahead in duration under ncu (as in session 46).
# (Its sanitizer stages are check_ab.sh helpers since the end of session 53; they hold the exact
# commands this call ran inline.)
# Its ncu loop stays as it ran (with the empty ${10}); call 4 ran it fixed, now ncu_vs_cudnn.
. lab/decode/check_ab.sh
P=s53b
H=lab/results/s46-call6
body() {
  S0=$(date +%s)
  gpu_info
  sanitize_stage $P
  echo "sanitize done at $(( $(date +%s) - S0 )) s"
  synccheck_stage $P
  echo "synccheck done at $(( $(date +%s) - S0 )) s"
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size"
  for spec in "fattn_decode 32 32 8 1 4096 128 0 b32_h32_kv8_q1_k4096_d128" "fattn_fwd 16 16 16 2048 2048 128 0 b16_h16_kv16_q2048_k2048_d128"; do
    set -- $spec; kn=$1; name=${10}
    (cd /tmp/$P && timeout 80 ncu --clock-control none --metrics "$M" --kernel-name regex:$kn --launch-skip 20 --launch-count 3 \
       bin/bench "cuda_fused_attn_bf16/$name\$" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_ours_$name.txt" 2>&1)
    echo "== ncu ours $name rc=$?"; grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|dram__|smsp__|launch__|ERR" "$R/ncu_ours_$name.txt" | head -30
    timeout 80 ncu --clock-control none --metrics "$M" --kernel-name regex:"fprop|flash|cudnn" --launch-skip 20 --launch-count 3 \
       python3 $H/cudnn_row.py $2 $3 $4 $5 $6 $7 $8 0.2 > "$R/ncu_cudnn_$name.txt" 2>&1
    echo "== ncu cudnn $name rc=$?"; grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|dram__|smsp__|launch__|ERR" "$R/ncu_cudnn_$name.txt" | head -30
  done
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
