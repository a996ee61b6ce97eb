# Session 25 call 3 (rewritten with lab/decode/check_ab.sh's helpers after the run, same steps):
# pack h90-s25c (call 2's one tile-copy path plus the index upload reused for equal values,
# src/packed.rs `uploaded`) against main (h90-s25m): decode tests, gpu_packed_index_reuse and
# memcheck on s25c, then the paged/packed decode rows alternating, 3 rounds.
. lab/decode/check_ab.sh
body() {
  gpu_info
  decode_tests s25c memcheck
  (cd /tmp/s25c && timeout 60 bin/gpu gpu_packed_index_reuse --exact --nocapture > $R/reuse.log 2>&1
   echo "gpu_packed_index_reuse rc=$?"; grep -E "test result|panicked" $R/reuse.log)
  paged_ab s25m s25c 3
}
archived body
