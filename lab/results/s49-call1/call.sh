# Session 49, call 1 (prepared at the end of session 48): a share of the Hopper softmax's exp2
# on the FMA pipes (common/softmax.cuh exp2_poly; FATTN_SM90_POLY_EXP_EVERY=N: key column pairs
# j % N == N - 1, so 2 -> half, 4 -> a quarter, 8 -> an eighth; 0, the default, is main's code
# byte for byte), timed through FUSED_ATTN_LAB_KERNEL_IMAGES (src/cuda/lab_images.rs) with ONE
# pack: s49m (main at the end of session 48, full) and fwd_sm90 images built by
# lab/fatbin-variant.sh (device-pack/fwd_sm90-poly{0,2,4,8}.fatbin, fwd_sm90-tree1.fatbin and fwd_sm90-tree1poly4.fatbin, ~0.3 MB each; rebuild them
# with `lab/fatbin-variant.sh fwd_sm90 device-pack/fwd_sm90-polyN.fatbin
# -DFATTN_SM90_POLY_EXP_EVERY=N` if device-pack/ is empty; the pack with `lab/pack-h90.sh s49m`
# and rename it to -9). Both are in ~/packs-aside too.
# 1. The override's first use on a GPU: gpu_hopper_prefill and the NaN tests with the poly4
#    image (its exp2_poly must keep NaN and give 0 for -inf); poly0 through the override
#    against the embedded image in the bench (they must tie: the same cubin).
# 2. envab, 2 rounds (order reversed on the second), six prefill rows: base (embedded), poly0,
#    poly2, poly4, poly8, tree (FATTN_SM90_MAX_TREE=1: a row's max over a key block as a
#    tree 6 FMNMX deep instead of a chain 17 deep, which sits right after each Q·Kᵀ
#    wait; in session 48's counters the max's 60 FMNMX hold 6 200 samples, 6.7%), and tree +
#    poly4. ~7 minutes.
# Session 48's ncu source counters (s48-call6): the 64 MUFU.EX2 of a thread's key block hold
# ~20% of the d128 kernel's samples, most of them 'wait' (the compiler spacing the MUFU at its
# 16 exp2 a clock per SM). A warp's key block issues ~300 other instructions; 64 exp2 take 512
# clocks of its SMSP's MUFU; each polynomial takes ~10 FMA/ALU issue slots instead.
# PREDICTION: poly4 or poly8 -1 to -3% on the d64/d128/d256 rows if the softmax is on the
# ping-pong's critical path; poly2 slower (issue-bound); poly0 = base within 0.3%; tree -0.3
# to -1% (d256's 80-key blocks keep the chain: control); tree + poly4 the sum of both.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49m
  I="$L/device-pack"
  (cd /tmp/s49m && cat COMMIT
   for t in gpu_hopper_prefill gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_sweep_bf16; do
     FUSED_ATTN_LAB_KERNEL_IMAGES="fwd_sm90=$I/fwd_sm90-poly4.fatbin" timeout 90 bin/gpu $t --exact --nocapture; echo "$t [poly4] rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases" "$R/tests.log" | cut -c1-220)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  envab s49m 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?|b16_h16_kv16_q2048_k2048_d256|b4_h32_kv32_q4096_k4096_d128)$' 2 \
    FUSED_ATTN_LAB_KERNEL_IMAGES "base=unset poly0=fwd_sm90=$I/fwd_sm90-poly0.fatbin poly2=fwd_sm90=$I/fwd_sm90-poly2.fatbin poly4=fwd_sm90=$I/fwd_sm90-poly4.fatbin poly8=fwd_sm90=$I/fwd_sm90-poly8.fatbin tree=fwd_sm90=$I/fwd_sm90-tree1.fatbin treepoly4=fwd_sm90=$I/fwd_sm90-tree1poly4.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
