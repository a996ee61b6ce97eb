# Session 45 call 7: what the 2048 decode's call costs outside the stamped window (pack s45st3 =
# the stamps build of main with lab_decode_stamps timing each call between CUDA events).
# Call 6: w16's stamped window ends 0.3 µs before w8's, yet call 3's bench had w16 0.4 µs slower.
# PREDICTION: outside the window (launch to first split entry, last combine end to the end
# event) w8 ~2.5 µs (bench 13.6 − window ~11.0) and w16 ~3.3 µs: the extra is in the launches
# (the 128-block grids), not in the kernels.
. lab/decode/check_ab.sh
stamp() {  # LABEL [VAR=VAL ...]
  local label="$1"; shift
  for run in 1 2 3; do
    (cd /tmp/s45st3 && env "$@" timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_${label}_$run.txt" 2>&1)
    echo "$label run $run rc=$?"; grep -E "^# (combine ends|call)" "$R/stamps_${label}_$run.txt"
  done
}
body() {
  gpu_info
  unpack s45st3
  stamp w8 X=1
  stamp w16 FUSED_ATTN_DECODE_SPLITS=16
  stamp b16 FUSED_ATTN_DECODE_SPLITS=16 FUSED_ATTN_DECODE_PARTIALS=block
}
archived body
