# Session 33 call 3: the output's TMA store (pack s33b) against HEAD's kernels (pack s33a, same
# code but the epilogue's 16-byte thread stores): every prefill row, 2 rounds alternating; then
# the switch inside s33b (FUSED_ATTN_SM90_O_STORE=threads: the same binary, thread stores) on the
# d64 rows (ptxas: the d64 plain instance spills 20 bytes in s33b against 8 in s33a); then the
# tests that reach the new store and memcheck.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096|16384)_' 2 s33a s33b
  envab s33b 'cuda_fused_attn_bf16/b(16|1)_h(16|8)_kv(16|8)_q(2048|512)_k(2048|512)_d64' 2 FUSED_ATTN_SM90_O_STORE \
    "tma=unset threads=threads"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  gpu_tests s33b "memcheck" gpu_hopper_prefill gpu_output_poisoned gpu_lse gpu_sweep_bf16 gpu_sweep_f16
}
archived body
