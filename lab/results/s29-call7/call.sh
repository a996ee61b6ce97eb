# Session 29 call 7: issue 14's table on pack s29c (HEAD's kernels: session 28's plus the
# halved cluster exchange of call 6, which only the small rows take): torch's cuDNN and FA2
# (bench_torch.py, do_bench medians), then ours (criterion medians), in one call.
. lab/decode/check_ab.sh
PACK=s29c
body() {
  gpu_info
  unpack $PACK
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  grep -E "^\| (prefill|decode)" "$R/torch1/bench_torch.md" "$R/torch1/decode/bench_torch.md" | cut -d'|' -f3,4,5,8
  cd "$L"
}
archived body
