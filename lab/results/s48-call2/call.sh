# Session 48, call 2: the producer's empty-barrier waits with a suspend-time hint
# (sm90::mbar_wait_idle: try_wait with 1 ms, SASS TRYWAIT + NANOSLEEP.SYNCS) against main.
# Packs: s47bb (main's kernels, 7ff9876) and s48hb (the hint), both bench only (the carry
# limit: the tests on the hint wait for a pack of their own).
# Call 1's source counters: the producer's retry loop (YIELD, TRYWAIT, BRA) ran 7.9M times in
# the d128 2048 kernel, 24M of its 328M warp instructions (7%), all on one of an SM's four
# schedulers, whose two consumer warps it competes with for issue slots.
# PREDICTION: s48h -0.3 to -1% on the persistent d64/d128 rows, d256 (one tile per CTA) level;
# if NANOSLEEP.SYNCS wakes late, every row slower.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s48hb
  (cd /tmp/s48hb && cat COMMIT)
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128|256)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128)$' 4 s47bb s48hb
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
