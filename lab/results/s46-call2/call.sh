# Session 46, call 2: the crate against the lab on the decode rows. Call 1's decode lab (the
# same SASS as the crate's sm_90 cubin but the dynamic shared base, 0x400 against 0x300) ran
# the 32x4096 row at 135.6 us against cuDNN's 134.8-135.4 (0.996-0.999) and, in ncu (clocks
# free), 126.4-126.6 us against cuDNN's 126.9-127.5; the crate's bench has been 0.982-0.985 of
# cuDNN in every call since session 36. Same call here, 2 rounds: the crate's decode rows
# (pack s45b = HEAD's kernels), torch's decode rows, the decode lab's rows with its peers; then
# the decode lab on K/V in torch, pool (cudaMallocAsync, as candle) and cudaMalloc memory
# (--placement); ncu of the crate's 32x4096 kernel and of the lab's with the same metrics.
# nvidia-smi samples clocks and power every 100 ms throughout (clocks.csv, marks.txt).
# PREDICTION: if the crate's bench stays ~1.5% behind the lab's on the same GPU, the cause is
# outside the kernel's code: placement (pool row) or the call path; ncu tells which.
. lab/decode/check_ab.sh
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> "$R/marks.txt"; }
body() {
  gpu_info
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 100 > "$R/clocks.csv" &
  MON=$!
  unpack s45b
  for r in 1 2; do
    mark "crate $r"; run_cfg crate s45b "$DECODE_ROWS" $r
    mark "torch $r"; mkdir -p "$R/torch$r"
    timeout 60 python3 "$L/scripts/bench_torch.py" --out "$R/torch$r" --rep-ms 100 --only decode > "$R/torch$r.log" 2>&1
    grep -E "^\| decode" "$R/torch$r/bench_torch.md" | cut -d'|' -f3,4,5,8
    mark "lab $r"; timeout 90 python3 lab/decode/decode_lab.py --lib .decode-lab/libdecode_lab.so --no-check > "$R/lab_$r.txt" 2>&1
    grep -E "^\(" "$R/lab_$r.txt"
  done
  mark placement
  timeout 120 python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so --placement .decode-lab/libdecode_lab.so > "$R/placement.txt" 2>&1
  cat "$R/placement.txt"
  mark end; kill $MON
  M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,sm__cycles_active.max,sm__cycles_active.avg,smsp__inst_executed.sum
  (cd /tmp/s45b && timeout 100 ncu --clock-control none --metrics $M --kernel-name regex:fattn_decode --launch-skip 10 --launch-count 3 \
     bin/bench 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_crate.txt" 2>&1)
  echo "== ncu crate"; grep -E "^  [a-zA-Z_].*\(|gpu__|dram__|sm__|smsp__" "$R/ncu_crate.txt" | head -40
  for kn in fattn_decode fprop; do
    timeout 100 ncu --clock-control none --metrics $M --kernel-name regex:$kn --launch-skip 6 --launch-count 3 \
      python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so --ring .decode-lab/libdecode_lab.so \
      --rounds 1 --rep-ms 10 --only none > "$R/ncu_lab_$kn.txt" 2>&1
    echo "== ncu lab $kn"; grep -E "^  [a-zA-Z_].*\(|gpu__|dram__|sm__|smsp__" "$R/ncu_lab_$kn.txt" | head -30
  done
}
archived body
