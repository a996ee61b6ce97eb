# Session 47, call 2: correctness and A/B of the two per-tile changes.
# Packs: s46a (session 46's kernels, the base) and s47b (7ff9876: the item's naming by launch-constant
# dividers, FastDiv, and the epilogue staged with stmatrix; full pack). The carry limit (64 MiB)
# leaves out s47a (FastDiv alone).
# 1. The Hopper prefill's correctness tests on s47b (persistent strided, tail-split, stream-K
#    and drawn grids, varlen, LSE, the bf16 sweep).
# 2. bench A/B, 3 rounds alternating, the prefill rows of issue 14's table at 2048/4096.
# PREDICTION (call 1's stamps: set-up 0.54 us, normalize+stage 0.59 us of a 25.8 us d128 2048
# tile): s47b -1.1 to -2.3% on d128 2048, -0.6 to -1.2% at 4096.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s47b
  (cd /tmp/s47b && cat COMMIT
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_lse gpu_sweep_bf16 gpu_varlen_sweep_bf16; do
     timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|SKIPPED" "$R/tests.log" | cut -c1-200)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128)$' 3 s46a s47b
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
