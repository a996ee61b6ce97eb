# Session 28 call 5 (pack s28e = the d128 tail split with drawn items, rule `drawn-tail`: an
# unmasked d128 grid that is not a whole number of rounds draws its tiles and then its last
# round's pieces from the counter, so the blocks that end their whole tiles first take the
# pieces; call 4's stamps: the 31st tiles end 825-846 µs apart by block and the fixed piece
# assignment waits for the slowest; a simulation from those stamps: 857 -> 846 µs):
# (a) gpu_hopper_prefill, the sanitizer subset and memcheck of it;
# (b) same-call A/B, 3 rounds alternating, rules without `drawn-tail` (base) against the
#     default on the d128 2048 / 4096 / GQA rows and the 2048 causal control.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk,pairs,tail
body() {
  gpu_info
  gpu_tests s28e "memcheck" gpu_hopper_prefill gpu_sanitizer_subset
  envab s28e 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128(_causal)?|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128)$' 3 FUSED_ATTN_SM90_TILE_RULES "base=$BASE drawn=unset"
  cd "$L"
}
archived body
