# Session 59, call 4 (pack s59b = s59a + two persistent d96 test cases, one per dtype): the
# coverage assertion that failed in call 3's reduced run (13 random cases: the f16 plain d96
# instance never ran) on the same 13 cases; then why the d96 instance gained 5-9% where call 2's
# prediction said 12-20%: ncu (clocks free, 3 launches after 20) of the (16,16,2048,d96) row on
# the d96 instance, on the padded d128 one (FUSED_ATTN_SM90_D96=0) and cuDNN's kernel.
# PREDICTION: the test passes. ncu: the d96 instance's tensor pipe busy a smaller share
# (60-68% against d128-padded's ~73%): its GEMMs shrink by a quarter while each block's softmax
# and barrier waits stay, so the ping-pong no longer hides the softmax (the reason d64 runs three
# consumers); issue-active up, cycles down 5-9%.
. lab/decode/check_ab.sh
P=s59b
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  (cd /tmp/$P && FUSED_ATTN_HOPPER_CASES=13 timeout 120 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/hopper_prefill13.log" 2>&1
   echo "gpu_hopper_prefill (13 cases) rc=$?"; grep -E "test result|panicked|ran " "$R/hopper_prefill13.log" | cut -c1-300 | tail -3)
  local M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread"
  local keep="^  [a-zA-Z_].*\\(|gpu__|sm__|smsp__|launch__|ERR"
  for d96 in 1 0; do
    (cd /tmp/$P && FUSED_ATTN_BENCH_CUDA_ONLY=1 FUSED_ATTN_SM90_D96=$d96 timeout 80 ncu --clock-control none --metrics "$M" --kernel-name regex:fattn_fwd --launch-skip 20 --launch-count 3 \
       bin/bench 'cuda_fused_attn_hd_bf16/b16_h16_kv16_q2048_k2048_d96$' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_d96_$d96.txt" 2>&1)
    echo "== ncu ours FUSED_ATTN_SM90_D96=$d96 rc=$?"; grep -E "$keep" "$R/ncu_d96_$d96.txt" | head -30
  done
  timeout 80 ncu --clock-control none --metrics "$M" --kernel-name regex:"fprop|flash|cudnn" --launch-skip 20 --launch-count 3 \
     python3 "$L/lab/results/s46-call6/cudnn_row.py" 16 16 16 2048 2048 96 0 0.2 > "$R/ncu_cudnn_d96.txt" 2>&1
  echo "== ncu cudnn rc=$?"; grep -E "$keep" "$R/ncu_cudnn_d96.txt" | head -30
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
