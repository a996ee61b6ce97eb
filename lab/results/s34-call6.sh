# Session 34 call 6 (the last ~160 s of device time, bench-only pack s34e): call 5's TMA-tile
# decode without the fence.proxy.async that each warp ran before re-filling a stage (call 5:
# +5% on 32×4096 against the cp.async kernel, as the per-row bulk copies in call 2, which had
# the same fence). Same-binary A/B, FUSED_ATTN_DECODE_TMA=0 the cp.async kernel, 2 rounds.
# Timing only: the tests ran on call 5's code (which differs by the fence alone).
. lab/decode/check_ab.sh
body() {
  envab s34e 'cuda_fused_attn_bf16/b(32|8|1)_h32_kv8_q1_k(4096|8192|2048)_' 2 FUSED_ATTN_DECODE_TMA "tma=unset cpasync=0"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
}
archived body
