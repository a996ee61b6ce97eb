# Session 26 call 3: (a) issue 13's CPU row on the Xeon host with the pipelined waves
# (79cfcdf: bench_cpu from that commit), all variants, then the same binary with
# FUSED_ATTN_CPU_PIPELINE=0 (the waves one after another) for the A/B; (b) issue 14's table on
# HEAD's kernels (pack s25c: fwd/decode kernels unchanged since), ours (criterion, every
# cuda_fused_attn_bf16 row) between two torch runs (prefill and decode, cuDNN and FA2).
. lab/decode/check_ab.sh
cpu_rows() {  # PIPE REPS ONLY...
  for dt in f32 f16; do for m in causal none; do
    FUSED_ATTN_CPU_PIPELINE=$1 RAYON_NUM_THREADS=2 taskset -c 2,3 "$L/device-pack/bench_cpu" --varlen --dtype $dt --reps $2 --mask $m ${3:+--only $3} > "$R/cpu_p$1_${dt}_$m.json" 2> "$R/cpu_p$1_${dt}_$m.err"
    python3 -c "
import json,sys
for l in open(sys.argv[1]):
  if l.startswith('{'):
    d=json.loads(l); print('pipe=$1', d['dtype'], d['causal'], d['varlen'], d['median_ms'], d['faults_per_call'], d['over_packed'], d['over_packed_into'])" "$R/cpu_p$1_${dt}_$m.json"
  done; done
}
torch_both() {  # TAG
  mkdir -p "$R/torch$1" "$R/torch$1/decode"
  timeout 150 python3 "$L/scripts/bench_torch.py" --out "$R/torch$1" --rep-ms 100 --only prefill > "$R/torch$1.log" 2>&1; echo "torch$1 prefill rc=$?"
  timeout 60 python3 "$L/scripts/bench_torch.py" --out "$R/torch$1/decode" --rep-ms 100 --only decode >> "$R/torch$1.log" 2>&1; echo "torch$1 decode rc=$?"
}
body() {
  gpu_info; lscpu > "$R/lscpu.txt"
  cpu_rows 1 15
  cpu_rows 0 13 packed,loop,loop_kept,packed_into
  unpack s25c
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 200 /tmp/s25c/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  for t in 1 2; do grep -E "^\| (prefill|decode)" "$R/torch$t/bench_torch.md" "$R/torch$t/decode/bench_torch.md" | cut -d'|' -f3,4,5,8 ; done
}
archived body
