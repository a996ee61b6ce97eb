# Session 28 call 4 (pack s28d = HEAD, the final kernels: the d128 tail split as measured in
# call 2, the wide d256 instance as in session 27):
# (a) lab stamps (device-pack/lab_stamps.xz, a FATTN_LAB_STAMPS=5 build of HEAD) of the d128
#     2048 row with the tail split (default) and without (FUSED_ATTN_SM90_TAIL_PIECES=1): where
#     the last round's time goes now;
# (b) racecheck of the sanitizer subset (its d128 tail-split shape; call 2's ran past 150 s);
# (c) the Hopper prefill tests and the error, poison and NaN tests (the rest of the binary's
#     code is call 1's, which passed there and in session 27's call 5).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s28d; head -1 /tmp/s28d/COMMIT
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  for pieces in default 1; do
    if [ $pieces = default ]; then unset FUSED_ATTN_SM90_TAIL_PIECES; else export FUSED_ATTN_SM90_TAIL_PIECES=$pieces; fi
    timeout 60 /tmp/st/lab_stamps 16 16 16 2048 128 > "$R/stamps_d128_2048_p$pieces.txt" 2>&1; echo "stamps p$pieces rc=$?"
  done
  unset FUSED_ATTN_SM90_TAIL_PIECES
  gzip "$R"/stamps_*.txt
  (cd /tmp/s28d && timeout 170 compute-sanitizer --tool racecheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_racecheck.log" | tail -2
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_lse gpu_errors gpu_output_poisoned gpu_poison_reaches_allocations gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it; do
     timeout 120 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"
     grep -hE "^gpu_.*(cases|sequences)|panicked|test result" "$R/t_$t.log" | cut -c1-250
   done)
  cd "$L"
}
archived body
