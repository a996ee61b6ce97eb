# Session 48, call 3: call 2's producer wait hint plus the per-tile mask span against main.
# Packs: s47bb (main's kernels, 7ff9876) and s48mb (both changes), bench only.
# Call 1's source counters: between the Q·Kᵀ wait and the softmax, each key block ran ~25
# dependent instructions deciding whether it needs a mask (two parameter loads from the
# constant bank, the rows' key ranges, compares): ~5 700 of the kernel's 91 000 samples (6%),
# on the path from a warpgroup's Q·Kᵀ to its next GEMMs. Now each warp computes once per tile
# the key blocks its rows see whole, and a block's test is one predicated branch (plain d128:
# 4 792 -> 4 744 SASS instructions, registers and spills unchanged).
# PREDICTION: s48mb -0.5 to -1.5% on every row (the hint's -0.5 / -0.9% on the 4096 rows on top).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s48mb
  (cd /tmp/s48mb && cat COMMIT)
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128|256)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128)$' 4 s47bb s48mb
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
