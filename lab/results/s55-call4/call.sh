# Session 55, call 4 (pack s55q, d696618's kernels): memcheck and synccheck of the sanitizer
# subset on the final kernels (call 2 ran memcheck, synccheck and racecheck of three
# multicast cases on the same fwd_sm90 image). PREDICTION: 0 errors.
. lab/decode/check_ab.sh
P=s55q
body() {
  unpack $P
  (cd /tmp/$P && timeout 100 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_mem_subset.log" 2>&1
   echo "memcheck subset rc=$?"; grep -E "SUMMARY|test result" "$R/san_mem_subset.log" | cut -c1-200 | tail -2)
  synccheck_stage $P
}
archived body
