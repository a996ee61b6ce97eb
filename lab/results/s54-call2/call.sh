# Session 54, call 2 (pack s54a: HEAD 335a575's kernels, the decode's row_facts helper landed).
# Issue 14's table on one machine (torch run 1, ours, torch run 2),
# then an A/B of the (16,16,16,2048,2048,128) rows on the wide instance (FUSED_ATTN_SM90_WIDE_
# PADDING=1.04 lets its 176-key blocks take 2048 keys at 3.1% padding; measured only in session
# 24, before either d128 instance multicast) against the rule (plain instance, K multicast),
# 3 rounds alternating; last, the whole GPU test binary and the oracle on the new decode SASS.
# PREDICTION: 16-19 of 19 rows; the d128 2048 and 32x4096 decode rows within ±1.5%
# of 1.0; the wide instance 1-3% slower at 2048 (padding 3.1% against its ~1-2% per-key gain);
# every test passes.
. lab/decode/check_ab.sh
P=s54a
F2048='cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128'
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  table_runs $P; table_md
  echo "table 1 done at $(( $(date +%s) - S0 )) s"
  cfg_rounds 3 "rule $P $F2048" "wide $P $F2048 FUSED_ATTN_SM90_WIDE_PADDING=1.04"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  gpu_all $P 250
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
