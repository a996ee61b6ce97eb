# Session 34 call 5 (the last ~330 s of device time): the decode split kernel with TMA tiles
# (branch s35-decode-tma, pack s34d: main + the kernel; kernels/decode_sm90.cu). Its first
# run: gpu_decode (asserts that default cases took the TMA kernel), gpu_sweep_bf16, memcheck
# and synccheck of the sanitizer subset, then the decode rows with and without it
# (FUSED_ATTN_DECODE_TMA=0: the cp.async kernel, same binary), 2 rounds (A B, B A).
# Prediction: 32×4096 -1 to -2% (4 boxes per warp tile instead of 32 cp.async per lane; the
# per-row bulk copies of call 2 lost 5-38% with 32 copies per tile), 8×8192 -1%, 2048 even.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s34d "memcheck synccheck" gpu_decode gpu_sweep_bf16
  envab s34d 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' 2 FUSED_ATTN_DECODE_TMA "tma=unset cpasync=0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
