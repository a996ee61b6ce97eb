# Session 31 call 1: the two prepared d64 changes (lab/results/s31-next/) against HEAD, bench
# only (the packs' GPU binaries stripped so that three fit in one call). s31a = HEAD 9aa6f60's
# kernels; s31b = mask_hi_only.diff (a masked block's rows that see from before it test only
# the upper bound); s31e = half_last_block.diff (d64's last key block as a half block when no
# row of the tile sees its second half). Predictions: s31b d64 2048 causal -1 to -2%, small
# causal -1 to -3%; s31e d64 2048 causal -2 to -3%; unmasked rows unchanged. 4 rounds
# alternating. The tests run on whatever is kept, in the session's last call.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b(1_h8_kv8_q512_k512|16_h16_kv16_q2048_k2048)_d64' 4 s31a s31b s31e
}
archived body
