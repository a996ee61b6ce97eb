# Session 29 call 2 (pack s29a = drawn pieces, rule `drawn-pieces`: the d128 tail split's
# pieces drawn from a counter by the blocks as they end their 31 whole rounds, instead of
# fixed to blocks 0..31; call 1: an SM's tile time is a property of the SM, corr 0.94-0.99
# between rows and runs, 26.6-27.1 µs at 2048):
# (a) gpu_hopper_prefill, identity, gpu_lse, the sanitizer subset and memcheck/racecheck/
#     synccheck of it;
# (b) same-call A/B, 3 rounds alternating, rules without `drawn-pieces` (fixed) against the
#     default on the d128 2048 / 4096 / GQA / 16k rows and the 2048 causal control.
#     Prediction (lab/results/s29-call1/sim.py): -1.1% on the four unmasked rows (849.7 ->
#     840.7 µs of kernel at 2048: the slowest SM's 31st tile bounds it), causal unchanged.
# (c) the small rows under ncu on lab_stamps (HEAD's lab build): the kernel's duration against
#     its CTAs' span (first entry to last end), for the time outside the CTAs.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk,pairs,tail
body() {
  gpu_info
  gpu_tests s29a "memcheck racecheck synccheck" gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_lse gpu_sanitizer_subset
  envab s29a 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128(_causal)?|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$' 3 FUSED_ATTN_SM90_TILE_RULES "fixed=$BASE drawn=unset"
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  for a in "1 8 8 512 64" "1 8 8 512 64 causal"; do
    n=$((${n:-0} + 1))
    timeout 90 ncu --metrics gpu__time_duration.sum,sm__cycles_active.max,gpc__cycles_elapsed.max -k regex:fattn_fwd --csv /tmp/st/lab_stamps $a > "$R/ncu_stamps_$n.txt" 2>&1; echo "ncu stamps $a rc=$?"
  done
  gzip "$R"/ncu_stamps_*.txt
  cd "$L"
}
archived body
