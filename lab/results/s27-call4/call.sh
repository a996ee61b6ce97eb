# Session 27 call 4: the final pack s27d (pairs only; the identity test compares same-instance
# pairs): gpu_varlen_matches_dense_per_sequence, gpu_hopper_prefill, the sanitizer subset and
# memcheck of it; then issue 14's table: ours (criterion, every cuda_fused_attn_bf16 row)
# between two torch runs (prefill and decode, cuDNN and FA2 through PyTorch 2.11, do_bench
# medians), as session 26 call 3.
. lab/decode/check_ab.sh  # (torch_both: a check_ab.sh helper since session 28; this call ran it inline)
PACK=${PACK:-s27d}
body() {
  gpu_info
  unpack $PACK; head -1 /tmp/$PACK/COMMIT
  (cd /tmp/$PACK
   for t in gpu_varlen_matches_dense_per_sequence gpu_hopper_prefill gpu_sanitizer_subset; do
     timeout 120 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"
     grep -hE "^gpu_.*(cases|sequences)|panicked" "$R/t_$t.log" | cut -c1-300
   done
   timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1
   echo "memcheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_memcheck.log" | tail -2)
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 200 /tmp/$PACK/bin/bench cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
  for t in 1 2; do grep -E "^\| (prefill|decode)" "$R/torch$t/bench_torch.md" "$R/torch$t/decode/bench_torch.md" | cut -d'|' -f3,4,5,8 ; done
}
archived body
