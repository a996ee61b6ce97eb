# Session 63, call 1 (pack s62a, the shipped kernels' binaries, + two fwd_sm90 images through
# FUSED_ATTN_LAB_KERNEL_IMAGES; an H200): each key block's P·V waited at the next block's turn.
# Found on the dev VM (SASS, no device): in every Hopper prefill instance ptxas scheduled the
# wait for a block's P·V (WARPGROUP.DEPBAR.LE gsb0, 0x0) above that block's softmax (plain d128:
# after the mask code, before the row max; d64, wide d128, d256: right after the Q·Kᵀ wait), so a
# consumer's softmax never ran under its own P·V, only under the other consumer's GEMMs. `defer`
# (FATTN_SM90_DEFER_PV_WAIT=1, this session's source) waits for it after the next turn barrier,
# with P packed into registers of its own under the P·V (SASS: turn barrier, wait, V release,
# the GEMMs, Q·Kᵀ wait, K release, ... the exponentials; no serialized wgmma, no new spills).
# `base`: HEAD's fwd_sm90 (8b744b1, the kernels of s60b/s62a).
# First 2 rounds alternating (A B / B A) on every prefill row of issue 14's table and the FA3
# shapes, nvidia-smi sampled meanwhile; then the prefill tests with `defer` (results must hold;
# the wide instances everywhere too) in the time left.
# PREDICTION: defer faster on the rows whose softmax was exposed: d128 2048/4096 -1 to -4%,
# d64 -1 to -3%, 16k d128 (wide) -1 to -3%, d256 -0 to -2% (its tensor pipe was at 94.5%);
# causal rows a little less; the small (1,8,512) rows level.
. lab/decode/check_ab.sh
P=s62a
BASE="FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-base.fatbin"
DEFER="FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-defer.fatbin"
ROWS='cuda_fused_attn_(bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096|16384)_|fa3_bf16/)'
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu --format=csv -lms 500 > "$R/smi.csv" 2>&1 &
  local smi=$!
  cfg_rounds 2 "base $P $ROWS $BASE" "defer $P $ROWS $DEFER"
  kill $smi
  grep -h -i "image" /tmp/cfg_*_1.log | sort | uniq -c | head -5
  python3 "$L/lab/results/s63-call1/ab.py" "$R/cfg_medians.txt" base defer | tee "$R/ab.md"
  (cd /tmp/$P && for t in gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_hopper_varlen gpu_lse gpu_output_poisoned \
       gpu_varlen_matches_dense_per_sequence gpu_hopper_multicast gpu_nan_in_a_key_reaches_only_rows_that_see_it; do
     (( $(date +%s) - S0 > 520 )) && { echo "skip $t: time"; continue; }
     env "$DEFER" timeout 70 bin/gpu $t --exact > "$R/test_$t.log" 2>&1; echo "defer $t rc=$? $(grep -E '^test result' "$R/test_$t.log")"
   done
   for t in gpu_hopper_prefill gpu_sweep_bf16 gpu_hopper_varlen; do
     (( $(date +%s) - S0 > 540 )) && { echo "skip wide $t: time"; continue; }
     env "$DEFER" FUSED_ATTN_SM90_WIDE_PADDING=100 timeout 50 bin/gpu $t --exact > "$R/testwide_$t.log" 2>&1
     echo "defer wide $t rc=$? $(grep -E '^test result' "$R/testwide_$t.log")"
   done)
  grep -h -i "lab image" "$R"/test*.log | sort | uniq -c | head -5
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
