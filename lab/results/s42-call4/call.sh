# Session 42 call 4: pack s42c (attention_varlen_into guesses too). The guess test (now with
# 5 steps into a caller's out) and its memcheck, then the whole GPU binary and the oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s42c
  (cd /tmp/s42c && head -1 COMMIT
   timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_device_indices_guess --exact --nocapture > "$R/san_guess.log" 2>&1; echo "memcheck guess rc=$?"; grep -E "^gpu_device|SUMMARY|test result|panicked" "$R/san_guess.log" | tail -4 | cut -c1-250)
  gpu_all s42c 330
}
archived body
