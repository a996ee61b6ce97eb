# Session 54, call 4: the profile of the row short in both of this session's tables (causal
# (16,16,16,2048,2048,64): 0.985 / 1.009 in call 2, 1.022 / 0.976 in call 3), ncu with clocks
# free, ours (pack s54a) and cuDNN's kernel on the same shape, 3 launches each.
# PREDICTION: cuDNN's kernel within ±3% of ours in duration; ours at a higher clock (the d128
# rows' pattern), with lower tensor-pipe activity per cycle.
. lab/decode/check_ab.sh
P=s54a
body() {
  S0=$(date +%s)
  gpu_info
  ncu_vs_cudnn $P "fattn_fwd 16 16 16 2048 2048 64 1 b16_h16_kv16_q2048_k2048_d64_causal"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
