# Session 48, call 6 (the session's last device time): issue 14's cold-start bar on the current
# code (examples/coldstart built at f278339's kernels, sm_90 cubins, CUDA_CACHE_DISABLE=1, a
# fresh process per family), then ncu's source counters of the new plain d128 kernel on the
# 2048 row (pack s48mb = 745e27b's kernels), for the next session's reading of the loop
# (lab/README.md, plan item 1).
# PREDICTION: every family's first call within 0.015 s of its warm one (session 36: 0.007 /
# 0.009 / 0.012 s); the loop's mask-test samples (~5 700 in call 1) gone.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  xz -dc "$L/device-pack/coldstart.xz" > /tmp/coldstart && chmod +x /tmp/coldstart
  for fam in prefill decode backward; do
    CUDA_CACHE_DISABLE=1 timeout 60 /tmp/coldstart $fam > "$R/cold_$fam.log" 2>&1; echo "cold $fam rc=$?"; grep -E "COLDSTART|first|warm" "$R/cold_$fam.log" | tail -3
  done
  echo "cold start done at $(( $(date +%s) - S0 )) s"
  unpack s48mb
  (cd /tmp/s48mb && head -1 COMMIT
   row=b16_h16_kv16_q2048_k2048_d128
   timeout 100 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SchedulerStats \
     --kernel-name regex:fattn_fwd_bf16_d128_sm90 --launch-skip 3 --launch-count 1 -f -o "/tmp/$row" \
     bin/bench "cuda_fused_attn_bf16/$row\$" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot \
     > "$R/ncu_$row.log" 2>&1; echo "ncu $row rc=$?"; tail -2 "$R/ncu_$row.log"
   ncu --import "/tmp/$row.ncu-rep" --page source --csv --print-source sass > "$R/${row}_sass.csv" 2> "$R/${row}_sass.err"
   echo "source page rc=$? $(wc -l < "$R/${row}_sass.csv") lines"
   ncu --import "/tmp/$row.ncu-rep" --page details > "$R/${row}_details.txt" 2>&1
   gzip "$R/${row}_sass.csv")
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
