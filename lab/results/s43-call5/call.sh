# Session 43 call 5: the (1,32,8,1,2048,128) decode by splits and partials (call 4's lead). Pack
# s43p = dcddb47 + partials.patch (FUSED_ATTN_DECODE_PARTIALS=block: per-block partials, the
# split blocks merge their four warps first, for every tile; a lab switch, not on main).
# Prediction: 16 splits with per-block partials (128 blocks, 16 partials a row, cuDNN's shape)
# beat the rule's 8 splits with per-warp partials (13.3-13.6 µs in session 23) by 0.3-0.8 µs;
# 16 with per-warp partials stays worse (13.8-13.9 then).
# gpu_decode under the switch first (correctness of the forced mode), then criterion medians,
# 3 rounds, the four configurations alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s43p
  cd /tmp/s43p
  FUSED_ATTN_DECODE_PARTIALS=block timeout 100 bin/gpu gpu_decode --exact --nocapture > "$R/t_decode_block.log" 2>&1
  echo "gpu_decode block rc=$?"; grep -E "cases|test result|panicked" "$R/t_decode_block.log" | head -3
  for r in 1 2 3; do
    for cfg in "0 warp" "16 warp" "16 block" "8 block"; do
      set -- $cfg
      env $( [ "$1" != 0 ] && echo FUSED_ATTN_DECODE_SPLITS=$1 ) FUSED_ATTN_DECODE_PARTIALS=$2 CRITERION_HOME=/tmp/c-$1-$2-$r \
        timeout 60 bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > /dev/null 2>&1
      medians /tmp/c-$1-$2-$r | sed "s/^/splits=$1 partials=$2 round=$r /" | tee -a "$R/medians.txt"
    done
  done
  cd "$L"
}
archived body
