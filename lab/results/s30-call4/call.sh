# Session 30 call 4: issue 14's table on pack s30d (HEAD's kernels, unchanged since session 29's
# call 7; no kernel change of this session was kept): torch's cuDNN and FA2 (bench_torch.py,
# do_bench medians), ours (criterion medians), torch again, in one call; before them the cold
# start of each kernel family with the driver's compute cache disabled (not measured since
# session 23).
. lab/decode/check_ab.sh
PACK=s30d
body() {
  gpu_info
  unpack $PACK
  (cd /tmp/$PACK && for f in prefill decode backward; do CUDA_CACHE_DISABLE=1 timeout 60 bin/coldstart $f; done > "$R/coldstart.log" 2>&1; cat "$R/coldstart.log" | tail -12)
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  grep -E "^\| (prefill|decode)" "$R/torch1/bench_torch.md" "$R/torch1/decode/bench_torch.md" "$R/torch2/bench_torch.md" "$R/torch2/decode/bench_torch.md" | cut -d'|' -f3,4,5,8
  cd "$L"
}
archived body
