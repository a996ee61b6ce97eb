# Session 42 call 5: pack s42d (fa44aab: attention_varlen_backward guesses too; the final
# code). The guess test (now with 5 backward steps) and its memcheck; cold start of the three
# kernel families (examples/coldstart of the same code, sm_90 cubins, CUDA_CACHE_DISABLE=1, a
# fresh process per family); then the whole GPU binary and the oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s42d
  (cd /tmp/s42d && head -1 COMMIT
   timeout 40 bin/gpu gpu_device_indices_guess --exact --nocapture > "$R/t_guess.log" 2>&1; echo "guess rc=$?"; grep -E "^gpu_device|panicked" "$R/t_guess.log" | tail -2 | cut -c1-260
   timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_device_indices_guess --exact > "$R/san_guess.log" 2>&1; echo "memcheck guess rc=$?"; grep -E "SUMMARY|test result" "$R/san_guess.log" | tail -2)
  xz -dc "$L/device-pack/coldstart.xz" > /tmp/coldstart && chmod +x /tmp/coldstart
  for fam in prefill decode backward; do
    CUDA_CACHE_DISABLE=1 timeout 60 /tmp/coldstart $fam > "$R/cold_$fam.log" 2>&1; echo "cold $fam rc=$?"; grep -E "COLDSTART|first|warm" "$R/cold_$fam.log" | tail -3
  done
  gpu_all s42d 270
}
archived body
