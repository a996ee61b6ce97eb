# Session 25 call 3: pack h90-s25c (the varlen decode's one tile-copy path of call 2, plus the
# index upload reused for equal values, src/packed.rs `uploaded`) against main (h90-s25m):
# decode tests, gpu_packed_index_reuse and memcheck on s25c, then the packed/paged decode rows
# alternating, 3 rounds. Results under /tmp/r, returned as one archive ($OUT/r.tgz).
export FUSED_ATTN_BENCH_CUDA_ONLY=1
R=/tmp/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/decode/check_ab.sh
body() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu0.txt; cat $R/gpu0.txt
  decode_tests s25c memcheck
  (cd /tmp/s25c && timeout 60 bin/gpu gpu_packed_index_reuse --exact --nocapture > $R/reuse.log 2>&1; echo "gpu_packed_index_reuse rc=$?"; grep -E "test result|panicked" $R/reuse.log)
  echo "tests $(( $(date +%s) - S )) s"
  unpack s25m
  for r in 1 2 3; do for t in s25m s25c; do
    CRITERION_HOME=/tmp/pcrit-$t-$r timeout 100 /tmp/$t/bin/bench 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_hostidx|packed_hostidx)' --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > /tmp/pab_${t}_$r.log 2>&1
    medians /tmp/pcrit-$t-$r | sed "s/^/pack=$t round=$r /" >> $R/ab_medians.txt
  done; done
  python3 $L/lab/hopper/ab_table.py $R/ab_medians.txt
  echo "ab $(( $(date +%s) - S )) s"
}
export -f body 2>/dev/null
body 2>&1 | tee $R/call.log
tar -czf $OUT/r.tgz -C /tmp r
