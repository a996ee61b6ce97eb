# Session 30 call 6: the conditional rescale (FlashAttention-4's): in kernels/fwd_sm90.cu's
# online softmax a row keeps its running max unless a key block raises it by more than 8 log2
# units (P <= 256), so corr is exactly 1 and a warp whose rows all kept theirs skips the O
# rescale (64 FMULs per block at d128, 32 at d64, 128 at d256; the plain d128 instance's
# unmasked block path is 617 instructions, 66 of them FMULs). Pack s30e = that change; s30d =
# HEAD 3f5ad68 (bench-only here). Prediction: every prefill row -2 to -4% (d128/d256 most,
# unmasked more than causal), the small rows unchanged.
# First the tests that take the Hopper prefill (both kernel generations), the f64 sweeps, NaN
# and LSE tests, memcheck of the sanitizer subset, the torch oracle; then 3 rounds alternating.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s30e "memcheck" gpu_hopper_prefill gpu_hopper_varlen gpu_varlen_matches_dense_per_sequence gpu_lse \
    gpu_sweep_bf16 gpu_sweep_f16 gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_nan_in_a_query_row_stays_in_that_row gpu_grad_sweep_bf16
  (cd /tmp/s30e && timeout 60 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1
   FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 60 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
   echo "oracle rc=$?"; grep -E "cases|test result" "$R/oracle.log" | head -3)
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096|16384)_' 3 s30d s30e
}
archived body
