# Session 31 call 5: the decode rows in both K/V layouts, ours and torch's in one call (session
# 22's call 2 asked the same on older kernels; its numbers were not kept). "bshd": K/V made
# (B,S,Hkv,D), the table's rows for ours; "bhsd": made (B,Hkv,S,D), the layout torch's rows in
# scripts/bench_torch.py use and candle-transformers' KV cache grows, passed to ours as
# transpose(1, 2) views. Ours (pack s31f) 2 rounds around torch's lab/decode/sdpa_layout.py.
# Then issue 13's CPU row on the host Xeon, if the bench_cpu binary travelled (lab/bin/).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s31f
  for r in 1 2; do
    CRITERION_HOME=/tmp/crit-lay-$r timeout 200 /tmp/s31f/bin/bench cuda_decode_layout_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/layout_$r.log" 2>&1
    medians /tmp/crit-lay-$r | sed "s/^/round=$r /" | tee -a "$R/layout_medians.txt"
    [ $r = 1 ] && { timeout 120 python3 "$L/lab/decode/sdpa_layout.py" > "$R/torch_layout.txt" 2>&1; cat "$R/torch_layout.txt"; }
  done
  if [ -x "$L/lab/bin/bench_cpu" ]; then
    lscpu > "$R/lscpu.txt"; grep -o -E 'avx512[a-z_0-9]*|amx[a-z_0-9]*' "$R/lscpu.txt" | sort -u | tr '\n' ' '; echo
    for dt in f32 f16; do
      RAYON_NUM_THREADS=2 timeout 150 taskset -c 2,3 "$L/lab/bin/bench_cpu" --varlen --dtype $dt --reps 13 > "$R/cpu_varlen_$dt.log" 2>&1
      echo "cpu $dt rc=$?"; tail -12 "$R/cpu_varlen_$dt.log"
    done
  fi
}
archived body
