# Session 30 call 7: the kept version (pack s30f: the conditional rescale on every Hopper
# prefill instance but d128's plain and `_mods`; SASS-identical to s30e's instances where on,
# to HEAD 3f5ad68's where off): synccheck of the sanitizer subset (the change adds a warp vote),
# then issue 14's table (torch, ours, torch) in one call.
. lab/decode/check_ab.sh
PACK=s30f
body() {
  gpu_info
  gpu_tests $PACK "synccheck"
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  cd "$L"
}
archived body
