# Session 30 call 2: does a leaner small-row kernel lose less to cold caches? Call 1 measured
# (ncu, cold = cache control all / warm = none, medians of 8 launches, µs at ncu's clocks):
# the default `_mods` d64 tile split over pairs 16.06 / 11.23 (causal 14.53 / 11.94), the
# plain 192-row instance 15.10 / 14.50 (causal 16.48 / 16.19): its cold loss is 0.6 µs
# against 4.8. Pack s30b is HEAD with the `_mods` instances' dense entry compiled with the
# modifiers off (kMods = false; a lab pack only: softcap/ALiBi problems are wrong in it), so
# the small rows run the same tile and split with the plain arithmetic's code only.
# Prediction: cold loss down to ~1 µs, the bench's small rows -10% or more.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64' 4 s30a s30b
  unpack s30b
  cd /tmp/s30b
  for c in "" _causal; do
    for mode in all none; do
      timeout 120 ncu --cache-control $mode --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum --csv -k regex:fattn_fwd \
        --launch-skip 40 --launch-count 8 bin/bench "cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64$c\$" --bench --noplot \
        > "$R/ncu_lean_${mode}$c.csv" 2> "$R/ncu_lean_${mode}$c.err"; echo "lean $mode$c rc=$?"
    done
  done
  # The same metrics on the default pack (instructions executed: the cold loss per instruction)
  unpack s30a; cd /tmp/s30a
  for c in "" _causal; do
    timeout 120 ncu --cache-control all --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum --csv -k regex:fattn_fwd \
      --launch-skip 40 --launch-count 8 bin/bench "cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64$c\$" --bench --noplot \
      > "$R/ncu_default_all$c.csv" 2> "$R/ncu_default_all$c.err"; echo "default all$c rc=$?"
  done
  gzip "$R"/*.csv
  cd "$L"
}
archived body
