# Session 45 call 11 (call 8 again; outputs dropped after each rep's end event, as the bench does): the floor of the 2048 decode's event timing (pack s45st7 = the stamps build
# of main; lab_decode_stamps times events around nothing, around one small candle op (output
# allocated, one kernel) and two, each after the same flush). Call 7 put ~4 µs of the call
# outside its stamped window. PREDICTION: events around nothing ~1 µs, one small op ~3 µs,
# two ~4.5 µs: our decode's two launches (split + PDL combine) and one allocation sit at that
# floor, within ~0.5 µs.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s45st7
  for run in 1 2 3; do
    (cd /tmp/s45st7 && timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_w8_$run.txt" 2>&1)
    echo "w8 run $run rc=$?"; grep -E "^# (combine ends|call|events)" "$R/stamps_w8_$run.txt"
  done
}
archived body
