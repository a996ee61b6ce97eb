# Session 46, call 9: the plain d128 instance's next item's first Q·Kᵀ in its last P·V's
# turn (branch s46-crosstile, pack s46x; kCrossTile in kernels/fwd_sm90.cu: on unmasked
# strided grids the tile loop takes every item's first Q·Kᵀ from the item before, the first
# item's from a prologue; the loop is compiled twice, and ptxas's scheduling of the other
# instances moved, d64 most). Session 46's stamps put the instance's fixed cost per tile at
# 1.79 us (1.18 key blocks). A first look with the session's last device time: the Hopper
# prefill and the bf16 sweep on s46x, then its d128 and d64 2048/4096 rows against s46a
# (HEAD's kernels), 2 rounds alternating.
# PREDICTION: d128 2048 -2 to -4%, 4096 and GQA -1 to -2%, the causal controls (drawn grids,
# the old loop) and d64 within +-1%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s46x; head -3 /tmp/s46x/COMMIT
  (cd /tmp/s46x && for t in gpu_hopper_prefill gpu_sweep_bf16; do
     timeout 80 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"
     grep -hE "cases|worst|panicked|test result" "$R/t_$t.log" | cut -c1-200 | tail -4
   done)
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b16_h16_kv16_q2048_k2048_d64)(_causal)?$' 2 s46a s46x
}
archived body
