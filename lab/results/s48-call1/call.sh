# Session 48, call 1 (prepared at the end of session 47): where the d128 tile's set-up (0.35 us)
# and epilogue (~1.1 us) stall, by SASS instruction. Pack: device-pack/h90-s47b-9.tar.xz (main's
# kernels, 7ff9876; rebuild with `lab/pack-h90.sh s47b` if the checkout is fresh and rename it
# to -9). ncu's source counters sample every warp's stall reason by PC: the set-up's lines
# (between the loop top's BSYNC and the Q wait's SYNCS.PHASECHK) and the epilogue's (from the
# BAR.SYNC before the STSMs to the UTMASTG) tell instruction-cache misses (no_instructions),
# constant-cache misses (imc_miss: the set-up reads ~15 parameter words once a tile) and plain
# latency (wait, short/long scoreboard) apart (`stalls.py` here reads the CSV). Then the test that
# session 47 could not finish.
# PREDICTION: the set-up's samples mostly imc_miss and no_instructions, the staging's mostly
# no_instructions and MIO throttle.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s47b
  (cd /tmp/s47b && head -1 COMMIT
   for row in 'b16_h16_kv16_q2048_k2048_d128' 'b4_h32_kv32_q4096_k4096_d128'; do
     timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SchedulerStats \
       --kernel-name regex:fattn_fwd_bf16_d128_sm90 --launch-skip 3 --launch-count 1 -f -o "$R/$row" \
       bin/bench "cuda_fused_attn_bf16/$row\$" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot \
       > "$R/ncu_$row.log" 2>&1; echo "ncu $row rc=$?"; tail -3 "$R/ncu_$row.log"
     # --print-source is not in every ncu's CLI (unchecked here: no ncu on the build machine);
     # without it the source page prints SASS for a binary without line info.
     ncu --import "$R/$row.ncu-rep" --page source --csv --print-source sass > "$R/${row}_sass.csv" 2> "$R/${row}_sass.err" \
       || ncu --import "$R/$row.ncu-rep" --page source --csv > "$R/${row}_sass.csv" 2>> "$R/${row}_sass.err"
     echo "source page rc=$? $(wc -l < "$R/${row}_sass.csv") lines"; head -c 600 "$R/${row}_sass.err"
     ncu --import "$R/$row.ncu-rep" --page details > "$R/${row}_details.txt" 2>&1
     gzip "$R/${row}_sass.csv"
   done
   timeout 150 bin/gpu gpu_varlen_paged_decode --exact --nocapture > "$R/paged_decode.log" 2>&1
   echo "gpu_varlen_paged_decode rc=$?"; grep -E "test result" "$R/paged_decode.log")
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
