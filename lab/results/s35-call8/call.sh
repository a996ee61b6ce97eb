# Session 35 call 8: issue 14's table on pack s35t (the trimmed last block), one torch run
# (cuDNN, FA2) then our rows, in the same call (the device time left allowed one torch run).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s35t
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 200 /tmp/s35t/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 \
    --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
}
archived body
