# Session 58, call 3, the same H200 (pack s58a, HEAD 99ed938): racecheck and synccheck of
# gpu_sanitizer_subset on the shipped kernels (session 56 ran racecheck on the same fwd/bwd
# kernels with the decode of its chains image; this is HEAD's decode).
# PREDICTION: racecheck 0 hazards (~140-175 s), synccheck 0 errors.
. lab/decode/check_ab.sh
P=s58a
body() {
  S0=$(date +%s)
  unpack $P
  (cd /tmp/$P && FUSED_ATTN_NAIVE_ON_CPU=1 timeout 330 compute-sanitizer --tool racecheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_racecheck.log" | tail -2)
  echo "racecheck done at $(( $(date +%s) - S0 )) s"
  synccheck_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
