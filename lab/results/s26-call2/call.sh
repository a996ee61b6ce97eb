# Session 26 call 2: (a) the Hopper forward's warpgroups skip the tile's last key block when
# none of their rows sees it (kSkipUnseen: the d192/d256 instances, plain, mods and wide; their
# SASS alone changed, key loops the same length), pack s26c against main's s25c: the Hopper
# tests, compute-sanitizer, the prefill A/B (d256 causal/unmasked, d128 causal control),
# cuDNN/FA2 in the same call; (b) issue 13's CPU row on the Xeon host with `loop_kept`.
# Prediction: (16,16,16,2048,2048,256) causal -2 to -3% (the top warpgroup of 80% of its
# 128-row tiles skips one 80-key block of ~13), unmasked and the control unchanged.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s26c
  (cd /tmp/s26c && head -3 COMMIT
   for t in gpu_hopper_prefill gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_lse gpu_varlen_matches_dense_per_sequence; do
     timeout 150 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|cases|test result|panicked" "$R/tests.log" | cut -c1-220
   FUSED_ATTN_HOPPER_CASES=13 timeout 150 compute-sanitizer --tool memcheck bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/san_mem_prefill.log" 2>&1
   echo "memcheck prefill rc=$?"; grep -E "SUMMARY|test result" "$R/san_mem_prefill.log" | tail -2
   for tool in memcheck racecheck synccheck; do
     timeout 100 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_hopper_varlen --exact --nocapture > "$R/san_${tool}_hv.log" 2>&1
     echo "$tool hopper_varlen rc=$?"; grep -E "SUMMARY|test result" "$R/san_${tool}_hv.log" | tail -2
   done)
  bench_ab 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d(256|256_causal|128_causal)$' 3 s25c s26c
  mkdir -p "$R/prefill"
  timeout 150 python3 "$L/scripts/bench_torch.py" --out "$R/prefill" --rep-ms 100 --only prefill > "$R/torchp.log" 2>&1
  echo "torchp rc=$?"; grep -E "^\| prefill" "$R/prefill/bench_torch.md" | cut -d'|' -f3,4,5,8 | head -20
  lscpu > "$R/lscpu.txt"
  for dt in f32 f16; do for m in causal none; do
    RAYON_NUM_THREADS=2 taskset -c 2,3 "$L/device-pack/bench_cpu" --varlen --dtype $dt --reps 13 --mask $m > "$R/cpu_${dt}_$m.json" 2> "$R/cpu_${dt}_$m.err"
    python3 -c "
import json,sys
for l in open(sys.argv[1]):
  if l.startswith('{'):
    d=json.loads(l); print(d['dtype'], d['causal'], d['varlen'], d['median_ms'], d['faults_per_call'], d['over_packed'])" "$R/cpu_${dt}_$m.json"
  done; done
}
archived body
