# Session 49, call 1 (prepared at the end of session 48, branch s49-polyexp): a quarter of the
# Hopper softmax's exp2 on the FMA pipes (softmax.cuh exp2_poly, FATTN_SM90_POLY_EXP_EVERY=4:
# key column pairs j % 4 == 3) against main's kernels.
# Packs, bench only: s48mb (main, 745e27b) and s49p4b (the branch built with
# NVCC_FLAGS=-DFATTN_SM90_POLY_EXP_EVERY=4; with the macro unset the branch's cubins are main's
# byte for byte). If they are not in device-pack/, they are in ~/packs-aside.
# Session 48's ncu source counters (s48-call6): the 64 MUFU.EX2 of a thread's key block hold
# ~20% of the d128 kernel's samples, most of them 'wait' (the compiler's fixed stall counts,
# which space the MUFU at its 16 exp2 a clock per SM). A warp's key block issues ~300 other
# instructions; 64 exp2 on the MUFU take 512 clocks of its SMSP's MUFU. With 16 of them as
# polynomials (~10 FMA/ALU instructions each), the MUFU needs 384 and the issue ~444.
# PREDICTION: -1 to -3% on the d64/d128/d256 rows if the softmax is on the ping-pong's critical
# path; level if the GEMMs are (then the poly's extra issue slots may cost up to +1%).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49p4b
  (cd /tmp/s49p4b && cat COMMIT)
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128|256)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128)$' 4 s48mb s49p4b
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
