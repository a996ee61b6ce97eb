# Session 44 call 5: main after the reverts (pack s44d = the kernels of session 40, the bench's
# torch-matched flush, two new decode shapes in the sanitizer subset): the decode tests and
# memcheck/racecheck of the subset on the m16 tile, then the decode rows and torch's decode
# rows in the same call.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s44d "memcheck racecheck" gpu_decode gpu_varlen_paged_decode
  (cd /tmp/s44d && CRITERION_HOME=/tmp/crit-dec timeout 100 bin/bench "$DECODE_ROWS" --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1)
  medians /tmp/crit-dec | tee "$R/medians.txt"
  torch_decode
}
archived body
