# Session 33 call 4: the output's TMA store, second version (pack s33c): boxes only where they
# lie wholly inside the output (call 3's version faulted on shifted top tiles), and not in the
# plain d64 instance (its spills). One round against HEAD's kernels (s33a), then the Hopper
# prefill test (both kernel generations), the bf16 sweep and memcheck, each under a timeout.
. lab/decode/check_ab.sh
body() {
  gpu_info
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_' 1 s33a s33c
  (cd /tmp/s33c && head -1 COMMIT
   for t in gpu_hopper_prefill gpu_sweep_bf16 gpu_output_poisoned; do
     timeout 120 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"
     grep -hE "^gpu_.*(cases|failed)|panicked" "$R/t_$t.log" | cut -c1-250
   done
   timeout 60 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1
   echo "memcheck rc=$?"; grep -E "SUMMARY|test result" "$R/san_memcheck.log" | tail -2)
}
archived body
