# Session 41 call 8: the small rows after 4e6ef99 (the sm_90a _mods instances, which the small
# grids run, gained a run-time scale test): torch prefill, the pack's small rows (3 rounds), torch.
. lab/decode/check_ab.sh
body() {
  unpack s41d
  mkdir -p "$R/torch1" "$R/torch2"
  timeout 100 python3 "$L/scripts/bench_torch.py" --out "$R/torch1" --rep-ms 100 --only prefill > "$R/torch1.log" 2>&1; echo "torch1 rc=$?"
  for r in 1 2 3; do
    CRITERION_HOME=/tmp/crit-small-$r timeout 60 /tmp/s41d/bin/bench 'cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench_$r.log" 2>&1
    medians /tmp/crit-small-$r | sed "s/^/round=$r /" | tee -a "$R/medians.txt"
  done
  timeout 100 python3 "$L/scripts/bench_torch.py" --out "$R/torch2" --rep-ms 100 --only prefill > "$R/torch2.log" 2>&1; echo "torch2 rc=$?"
  grep -h "512" "$R"/torch*/bench_torch.md | head -8
}
archived body
