# Session 44 call 2: the decode split kernel's ring filled before the first wait, and a
# 4-stage ring for short splits on few blocks (pack s44b; s44a = main's kernels).
# Prediction: the 2048 row's warps (4 tiles each at 8 splits) now have every tile in flight
# from the start: one DRAM round trip less on the chain, 13.3 -> ~12.6-12.9 µs; the other
# decode rows (3-stage ring, prologue only) within ±0.5%.
. lab/decode/check_ab.sh
DEC='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k'
ROW='cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$'
run_cfg() {  # LABEL PACK FILTER ROUND [VAR=VAL ...]
  local label="$1" pack="$2" filter="$3" r="$4"; shift 4
  (cd /tmp/$pack && env "$@" CRITERION_HOME="/tmp/crit-$label-$r" timeout 120 bin/bench "$filter" --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/cfg_${label}_$r.log" 2>&1)
  medians "/tmp/crit-$label-$r" | sed "s/^/cfg=$label round=$r /" | tee -a "$R/cfg_medians.txt"
}
body() {
  gpu_info
  unpack s44a; unpack s44b
  gpu_tests s44b "" gpu_decode gpu_varlen_paged_decode gpu_lse
  (cd /tmp/s44b && FUSED_ATTN_DECODE_STAGES=4 timeout 200 bin/gpu gpu_decode --exact --nocapture > "$R/t_decode_stages4.log" 2>&1; echo "gpu_decode stages4 rc=$?"
   grep -hE "^gpu_|panicked" "$R/t_decode_stages4.log" | cut -c1-300
   for tool in memcheck racecheck; do
     FUSED_ATTN_DECODE_STAGES=4 timeout 150 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san4_$tool.log" 2>&1
     echo "stages4 $tool rc=$?"; grep -E "SUMMARY|test result" "$R/san4_$tool.log" | tail -2
   done)
  for r in 1 2 3; do
    if (( r % 2 == 1 )); then order="A B C D E"; else order="E D C B A"; fi
    for c in $order; do
      case $c in
        A) run_cfg main s44a "$DEC" $r X=1 ;;
        B) run_cfg ring4 s44b "$DEC" $r X=1 ;;
        C) run_cfg stages3 s44b "$DEC" $r FUSED_ATTN_DECODE_STAGES=3 ;;
        D) run_cfg split11 s44b "$ROW" $r FUSED_ATTN_DECODE_SPLITS=11 ;;
        E) run_cfg split16 s44b "$ROW" $r FUSED_ATTN_DECODE_SPLITS=16 ;;
      esac
    done
  done
  torch_decode
}
archived body
