# Session 50, call 2: the plain d128 Hopper instance (HopperTraits<128, 0>) with 3 K/V stages
# and one Q buffer (HopperConfig<128, 128, 3, 2, 24, 240, 1, true>, 230 520 bytes of shared
# memory) against main's 2 stages and 2 Q buffers (s49fb: pack s49f = ae4ce5b, bench only).
# Why: with K/V multicast the two CTAs of a pair refill a stage only once both have released
# it, so the slower one holds the other back; session 49's probe (half the K/V bytes, no
# coupling) ran the unmasked d128 rows 9.5-12% faster, multicast only 1.3-3.0%. A third stage
# gives the pair a block of slack. One Q buffer: the next tile's Q lands after the last
# Q·Kᵀ (the wide d128 instance's scheme), O is stored from registers (no staging).
# (Its tests run with the table, call 3, if it wins: two full packs pass the device tool's
# 64 MiB.) bench_ab of the six plain-d128 rows (2048, 4096, GQA 8:1; causal and not), 4 rounds.
# PREDICTION: unmasked rows -1 to -4% (the pair's slack), causal rows (drawn grid, no
# multicast) within ±1% (the Q hand-over later, the third stage's prefetch).
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s50st3b; unpack s49fb
  bench_ab 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128)(_causal)?$' 4 s49fb s50st3b
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
