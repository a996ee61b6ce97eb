# Session 41 call 6: examples/lab_scale_range (pack s41sr) — where each CUDA kernel stops being
# right as the softmax scale grows (the CUDA hunt's NaN outputs at scale 1e30; the CPU is right).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41sr
  (cd /tmp/s41sr && head -1 COMMIT && timeout 200 bin/lab_scale_range > "$R/scale_range.md" 2>&1; echo "rc=$?")
  cat "$R/scale_range.md"
}
archived body
