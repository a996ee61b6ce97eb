# Session 44 call 4: the swapped decode tile (S^T = K·Q^T, O^T = V^T·P^T; pack s44c, on by
# default for dense plain f16/bf16 splits of ≤ 8 rows with per-warp partials), against
# FUSED_ATTN_DECODE_SWAPAB=0 (the m16 tile, same binary) and main (s44a).
# Prediction: half the mma and exp2 per 16-key tile shortens each warp's 4-tile chain on the
# 2048 row: 13.3 -> 12.7-13.0 µs; 32k and 8x8192 rows -0.5 to -2% (fewer instructions, still
# DRAM-bound); the Sq 4 (16-row) and 32x4096 (one split) rows unchanged (they do not take it).
. lab/decode/check_ab.sh
DEC='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k'
run_cfg() {  # LABEL PACK FILTER ROUND [VAR=VAL ...]
  local label="$1" pack="$2" filter="$3" r="$4"; shift 4
  (cd /tmp/$pack && env "$@" CRITERION_HOME="/tmp/crit-$label-$r" timeout 120 bin/bench "$filter" --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/cfg_${label}_$r.log" 2>&1)
  medians "/tmp/crit-$label-$r" | sed "s/^/cfg=$label round=$r /" | tee -a "$R/cfg_medians.txt"
}
body() {
  gpu_info
  unpack s44a; unpack s44c
  gpu_tests s44c "memcheck racecheck" gpu_decode gpu_lse gpu_sweep_bf16 gpu_output_poisoned
  for r in 1 2 3; do
    if (( r % 2 == 1 )); then order="A B C"; else order="C B A"; fi
    for c in $order; do
      case $c in
        A) run_cfg main s44a "$DEC" $r X=1 ;;
        B) run_cfg swapab s44c "$DEC" $r X=1 ;;
        C) run_cfg m16 s44c "$DEC" $r FUSED_ATTN_DECODE_SWAPAB=0 ;;
      esac
    done
  done
  torch_decode
}
archived body
