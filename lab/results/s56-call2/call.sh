# Session 56, call 2 (pack s56b: 1eeeb56, the decode's QK^T in two accumulator chains at head
# dims <= 128; PACK_COLDSTART=1). Issue 14's table on one machine (torch run 1, ours, torch
# run 2); a same-call A/B of the landed decode against HEAD 312a371's decode image (dec-base,
# call 1's base) on the four one-query decode rows, 2 rounds; the cold start; the decode tests
# and both 16-bit sweeps on the pack.
# PREDICTION: 18-19 of 19 rows at or above cuDNN (the 32x4096 decode within +-0.7% of cuDNN,
# machine-dependent: 1.009 on call 1's machine); A/B: 2048 -1 to -2.5%, the others within
# +-0.4%; cold start within 0.5 s of warm; every test passes.
. lab/decode/check_ab.sh
P=s56b
ROWS='cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|1_h32_kv8_q1_k2048|8_h32_kv8_q1_k8192|1_h32_kv8_q1_k32768)_d128$'
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  table_runs $P; table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  cfg_rounds 2 "chains $P $ROWS" "base $P $ROWS FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack/dec-base.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  coldstart_stage $P
  echo "coldstart done at $(( $(date +%s) - S0 )) s"
  pack_tests $P gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sweep_bf16 gpu_sweep_f16
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
