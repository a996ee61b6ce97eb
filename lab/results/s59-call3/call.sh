# Session 59, call 3 (pack s59a, the d96 Hopper instances): compute-sanitizer on the new code.
# gpu_sanitizer_subset holds a d96 prefill case (1,4,1,16,2049,96) in f16/bf16, now on the d96
# instance; gpu_sanitizer_hopper_varlen draws head dims 72/96 among others; gpu_hopper_prefill
# (13 random cases + the persistent ones, among them d96 strided and d80 causal drawn) under
# memcheck; then synccheck of the subset.
# PREDICTION: memcheck 0 errors, racecheck 0 hazards, synccheck 0 errors everywhere.
. lab/decode/check_ab.sh
P=s59a
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  sanitize_stage $P
  echo "sanitize part $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P && FUSED_ATTN_HOPPER_CASES=13 FUSED_ATTN_NAIVE_ON_CPU=1 timeout 170 compute-sanitizer --tool memcheck --error-exitcode 97 \
     bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/mem_hopper_prefill.log" 2>&1
   echo "memcheck gpu_hopper_prefill rc=$?"; grep -E "ERROR SUMMARY|test result|ran |panicked" "$R/mem_hopper_prefill.log" | cut -c1-300 | tail -4)
  echo "memcheck part $(( $(date +%s) - S0 )) s"
  synccheck_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
