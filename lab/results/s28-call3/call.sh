# Session 28 call 3 (pack s28c = HEAD: the tail split on the d128 instances and, as extra CTAs
# of its one-tile-per-CTA grid, on the wide d256 instance; the merge loop not unrolled):
# (a) tests: gpu_hopper_prefill (asserts some persistent cases cut their last round into
#     pieces), the packed-vs-dense identity, the sanitizer subset (two unmasked 136-tile
#     shapes, d128 and d256) and memcheck / synccheck of it;
# (b) issue 14's table: ours (criterion, every cuda_fused_attn_bf16 row) between two torch
#     runs (prefill and decode, cuDNN and FA2 through PyTorch 2.11, do_bench medians);
# (c) same-call A/B, 2 rounds alternating, FUSED_ATTN_SM90_TAIL_PIECES=1 (no split) against the
#     default on the d256 and d128 2048 rows (causal: controls);
# (d) racecheck of the sanitizer subset last (the slowest tool).
. lab/decode/check_ab.sh  # (torch_both: a check_ab.sh helper since session 28; this call ran it inline)
PACK=${PACK:-s28c}
body() {
  gpu_info
  gpu_tests $PACK "memcheck synccheck" gpu_hopper_prefill gpu_varlen_matches_dense_per_sequence gpu_sanitizer_subset
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 200 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  for t in 1 2; do grep -E "^\| (prefill|decode)" "$R/torch$t/bench_torch.md" "$R/torch$t/decode/bench_torch.md" | cut -d'|' -f3,4,5,8 ; done
  tar -czf "$OUT/r-table.tgz" -C "$(dirname "$R")" "$(basename "$R")"
  envab $PACK 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d(256|128)(_causal)?$' 2 FUSED_ATTN_SM90_TAIL_PIECES "off=1 on=unset"
  (cd /tmp/$PACK && timeout 200 compute-sanitizer --tool racecheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_racecheck.log" | tail -2)
  cd "$L"
}
archived body
