# Session 33 call 5: the TMA store on grids of one round only (pack s33d: s33c's kernels, the
# host sets o_tma only when every block's one tile ends the launch) against HEAD (s33a), every
# prefill row but 16k, one round (the device time left).
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_' 1 s33a s33d
}
archived body
