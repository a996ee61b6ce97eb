# Prepared at the end of session 35 (branch s36-decode-staged, not merged): the dense 16-bit
# d128 decode split kernel with cuDNN's data movement (kernels/decode_sm80.cu, the lab macro
# FATTN_LAB_DECODE_STAGED, on by default on the branch): 128-key stages of K, then of V, copied
# by the whole block into one buffer each, four block barriers per stage; each warp computes
# the same tiles in the same order as before, so the results keep their bits. 239 registers
# (222 before), no spills, two blocks per SM. Not run on a GPU yet.
# Packs: on the branch, `lab/pack-h90.sh s36a` -> device-pack/h90-s36a-9.tar.xz (prebuilt at the
# end of session 35), against main's full pack h90-s35u-9.tar.xz (dfbba1b's kernels).
#   CALL=tests  gpu_decode, gpu_varlen_paged_decode, gpu_sweep_bf16, gpu_lse, memcheck, racecheck
#   CALL=ab     the decode rows, main (s35u) against s36a, 2 rounds; then ncu of the 32x4096 row
#               on both (DRAM throughput, duration, instructions)
# Prediction: if cuDNN's 88-90% of DRAM peak comes from its data movement, 32x4096 -2 to -4%
# (138 -> ~134 µs); 8x8192 the same; the split rows (2048, 32k, Sq 4) within ±2%.
. lab/decode/check_ab.sh
tests_call() {
  gpu_info
  gpu_tests s36a "memcheck racecheck" gpu_decode gpu_varlen_paged_decode gpu_sweep_bf16 gpu_lse
}
ab_call() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' 2 s35u s36a
  for t in s35u s36a; do
    (cd "/tmp/$t" && timeout 90 ncu --section SpeedOfLight --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
      -k regex:fattn_decode_bf16 -s 10 -c 2 bin/bench 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096' --bench \
      --warm-up-time 0.1 --measurement-time 0.1 --sample-size 10 --noplot > "$R/ncu_$t.txt" 2>&1; echo "ncu $t rc=$?")
    grep -E "Duration|DRAM Throughput|inst_executed" "$R/ncu_$t.txt" | head -6
  done
}
archived "${CALL:-tests}_call"
