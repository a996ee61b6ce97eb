# Prepared at the end of session 29, not run: the first GPU call of session 30 (the next
# session's plan, item 1). Needs a lab pack of HEAD as device-pack/h90-s30a-9.tar.xz
# (`lab/pack-h90.sh s30a`, renamed). Question: how much of the small rows' cold-cache loss
# (session 29 call 4: ours 16.05 µs cold / 11.73 warm, cuDNN 11.14 / 10.14) does a leaner
# kernel save? The same row on three configurations, each cold (ncu cache control all) and warm
# (none), 8 launches past the warm-up: the default (`_mods` 128-row tile, 6 416 SASS
# instructions, split over CTA pairs), the `_mods` tile without the split (rules without
# `pairs`), and the plain d64 instance (3 360 instructions, 192-row tile; rules without
# `small-grid` and `pairs`).
. lab/decode/check_ab.sh
ALL=small-grid,persistent,dynamic,wide,shift,streamk,pairs,tail
NOPAIRS=small-grid,persistent,dynamic,wide,shift,streamk,tail
PLAIN=persistent,dynamic,wide,shift,streamk,tail
body() {
  gpu_info
  # First: the sanitizer subset's (1,2,1,256,256,64) shape, added at the end of session 29 and
  # not yet run on a GPU (a causal tile whose pair's rank 1 has no key block: under the halved
  # exchange, rank 1 stores rows from rank 0's partial alone).
  gpu_tests s30a "memcheck racecheck" gpu_sanitizer_subset gpu_hopper_prefill
  unpack s30a
  cd /tmp/s30a
  for cfg in "default=$ALL" "nopairs=$NOPAIRS" "plain=$PLAIN"; do
    label="${cfg%%=*}"; export FUSED_ATTN_SM90_TILE_RULES="${cfg#*=}"
    for c in "" _causal; do
      for mode in all none; do
        timeout 120 ncu --cache-control $mode --metrics gpu__time_duration.sum,sm__cycles_active.max --csv -k regex:fattn_fwd \
          --launch-skip 40 --launch-count 8 bin/bench "cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64$c\$" --bench --noplot \
          > "$R/ncu_${label}_${mode}$c.csv" 2> "$R/ncu_${label}_${mode}$c.err"; echo "$label $mode$c rc=$?"
      done
    done
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  gzip "$R"/*.csv
  cd "$L"
}
archived body
