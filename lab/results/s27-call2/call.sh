# (envab: lab/decode/check_ab.sh since the end of session 27; this call ran the same function inline.)
# Session 27 call 2 (pack s27b = small d64 grids split over clusters of two blocks, rule `pairs`):
# (a) tests: gpu_hopper_prefill (asserts some cases split over pairs), the packed-vs-dense
#     identity, LSE, poison, errors, NaN, the sanitizer subset (now with a pair-split shape) and
#     compute-sanitizer memcheck / racecheck / synccheck of it; (b) same-call A/B, 3 rounds
#     alternating, rules without `pairs` (base) against the default, on the small rows and the
#     d64 2048 controls; (c) ncu kernel durations of the small rows both ways.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk
body() {
  gpu_info
  unpack s27b; head -3 /tmp/s27b/COMMIT
  cd /tmp/s27b
  for t in gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_lse gpu_output_poisoned gpu_errors \
           gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_sanitizer_subset; do
    timeout 240 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"
    grep -hE "^gpu_|panicked" "$R/t_$t.log" | cut -c1-300
  done
  for tool in memcheck racecheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
    echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
  done
  cd "$L"
  envab s27b 'cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64|b16_h16_kv16_q2048_k2048_d64)' 3 FUSED_ATTN_SM90_TILE_RULES "base=$BASE pairs=unset"
  cd /tmp/s27b
  for cfg in base pairs; do
    if [ $cfg = base ]; then export FUSED_ATTN_SM90_TILE_RULES=$BASE; else unset FUSED_ATTN_SM90_TILE_RULES; fi
    for row in b1_h8_kv8_q512_k512_d64 b1_h8_kv8_q512_k512_d64_causal; do
      timeout 90 ncu --metrics gpu__time_duration.sum -k regex:fattn_fwd --csv \
        bin/bench "cuda_fused_attn_bf16/$row\$" --bench --warm-up-time 0.1 --measurement-time 0.3 \
        --sample-size 10 --noplot > "$R/ncu_${cfg}_$row.csv" 2>"$R/ncu_${cfg}_$row.err"
      python3 - "$R/ncu_${cfg}_$row.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] == "gpu__time_duration.sum":
        d[r[4][:48]].append(float(r[-1].replace(",", "")))
for k, v in d.items():
    if len(v) > 50: print(sys.argv[1].split("/")[-1], k, len(v), "median", statistics.median(v))
PY
    done
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  cd "$L"
}
archived body
