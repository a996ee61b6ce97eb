# Session 41 call 7: pack s41d (4e6ef99: large scales take the pre-scaled arithmetic, src/limits.rs;
# sm_90a _mods instances pre-scale above it at run time). The new gpu_large_scale and
# gpu_empty_inputs, lab_scale_range again (call 6's table, after), memcheck of gpu_large_scale,
# the whole GPU binary and the torch oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s41d "" gpu_large_scale gpu_empty_inputs
  (cd /tmp/s41d && timeout 60 bin/lab_scale_range > "$R/scale_range.md" 2>&1; echo "lab rc=$?"
   awk -F' [|] ' 'NR > 1 && ($5 != 0 || $6 != 0) {print}' "$R/scale_range.md" | head -30
   timeout 120 compute-sanitizer --tool memcheck bin/gpu gpu_large_scale --exact > "$R/san_large.log" 2>&1; echo "memcheck large rc=$?"; grep -E "SUMMARY|test result" "$R/san_large.log" | tail -2)
  gpu_all s41d 300
}
archived body
