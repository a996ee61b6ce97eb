# Session 45 call 12: what the output's allocation costs the 2048 decode itself (pack s45st8:
# the stamps build of main; lab_decode_stamps also times the same decode as one packed sequence,
# `attention_varlen` allocating its output against `attention_varlen_into` on an output made
# beforehand, each after the flush, medians of 9). Calls 8-11: a small candle op's allocation
# costs ~0.5-0.7 µs. PREDICTION: the into call 0.4-0.7 µs below the allocating one.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s45st8
  for run in 1 2 3; do
    (cd /tmp/s45st8 && timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_w8_$run.txt" 2>&1)
    echo "w8 run $run rc=$?"; grep -E "^# (call|events|the call)" "$R/stamps_w8_$run.txt"
  done
}
archived body
