# Session 58, call 5 (pack s58a, an H200): ncu with clocks free of the unmasked d128 rows that
# were short against one torch run on the H100 in session 57 (2048 and 16k keys), ours and
# cuDNN's kernel on the same shape, 3 launches each (no H100 is lent today; this is the same
# kernels' profile on the H200, where both rows are 1.02-1.04 pooled).
# PREDICTION: ours within 1-4% of cuDNN's duration (shorter), at a lower or equal SM clock
# (the 700 W cap), tensor pipe active 75-85% of active cycles on both.
. lab/decode/check_ab.sh
P=s58a
body() {
  S0=$(date +%s)
  gpu_info
  ncu_vs_cudnn $P "fattn_fwd 16 16 16 2048 2048 128 0 b16_h16_kv16_q2048_k2048_d128" \
    "fattn_fwd 1 32 32 16384 16384 128 0 b1_h32_kv32_q16384_k16384_d128"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
