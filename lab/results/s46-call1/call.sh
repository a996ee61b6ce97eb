# Session 46, call 1: the (32,32,8,1,4096,128) decode row's read pattern. Session 45's plan
# item 1: is our split kernel's DRAM efficiency (84.5% of peak against cuDNN's 86.1%) a
# property of how it reads (per-warp cp.async rings of 16-key tiles, one kv head per block),
# or of the rest of the kernel? lab/stream/stream_lab.py --ring times pure reads of the row's
# K+V in cp.async rings of several shapes (per-warp rings as ours, block-cooperative rings as
# cuDNN's barriers suggest, blocks over 2-8 adjacent heads) beside our decode kernel and cuDNN,
# 3 rounds alternating. Then ncu's DRAM counters (whatever this ncu lists for gh100) for ours,
# cuDNN's kernel and the ours-shaped ring; then racecheck of the sanitizer subset with a
# longer limit (session 45 call 13 was cut at 110 s).
# PREDICTION: the ours-shaped pure read (warp-ring hb1 s3) reads at or below cuDNN's rate;
# if a block ring or a multi-head block reads >= 2% faster, that is the lead.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  timeout 200 python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so --ring .decode-lab/libdecode_lab.so \
      --rounds 3 --rep-ms 100 > "$R/ring.txt" 2>&1; echo "ring rc=$?"; tail -32 "$R/ring.txt"
  ncu --query-metrics-mode all --chip gh100 --query-metrics > "$R/metrics_all.txt" 2>&1
  grep -oE "^(dram|fbpa)__[A-Za-z0-9_]+\.sum( |$)" "$R/metrics_all.txt" | tr -d ' ' | sort -u > "$R/metrics_dram.txt"
  wc -l "$R/metrics_dram.txt"; head -60 "$R/metrics_dram.txt"
  M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,$(head -40 "$R/metrics_dram.txt" | paste -sd,)"
  for spec in "fattn_decode|ours" "fprop|cudnn" "read_ring|warp-ring hb1 s3 d96" "read_ring|block-ring hb1 s3 d96"; do
    kn=${spec%%|*}; only=${spec#*|}; tag=$(echo "$only" | tr ' ' '_')
    timeout 90 ncu --clock-control none --metrics "$M" --kernel-name "regex:$kn" --launch-skip 6 --launch-count 2 \
      python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so --ring .decode-lab/libdecode_lab.so \
      --rounds 1 --rep-ms 10 --only "$only" > "$R/ncu_$tag.txt" 2>&1
    echo "== ncu $only rc=$?"; grep -E "^  [a-zA-Z_].*\(|gpu__time|dram__|fbpa__|ERR" "$R/ncu_$tag.txt" | head -70
  done
  left=$(( 560 - ($(date +%s) - S0) ))
  echo "racecheck limit ${left}s"
  unpack s45b
  (cd /tmp/s45b && timeout $left compute-sanitizer --tool racecheck bin/gpu gpu_sanitizer_subset --exact --nocapture \
     > "$R/san_racecheck.log" 2>&1; echo "racecheck rc=$?"; grep -E "SUMMARY|test result|hazard" "$R/san_racecheck.log" | tail -4)
}
archived body
