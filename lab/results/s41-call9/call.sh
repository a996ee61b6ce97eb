# Session 41 call 9: pack s41e (the sm80 _varlen entries' range loop out of line and one K/V copy
# for unpaged and page-aligned blocks; dense PTX unchanged). The varlen tests on the sm80 kernels
# (forced) and by default, memcheck of the varlen subset, one round of the paged-decode bench.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s41e
  (cd /tmp/s41e && head -1 COMMIT
   FUSED_ATTN_CUDA_KERNELS=sm80 timeout 60 bin/gpu gpu_varlen_sweep_ --nocapture --test-threads=1 > "$R/sm80_sweeps.log" 2>&1; echo "sm80 sweeps rc=$?"
   grep -E "^gpu_varlen_sweep|test result" "$R/sm80_sweeps.log" | cut -c1-220
   for t in gpu_varlen_matches_dense_per_sequence gpu_large_scale gpu_grad_packed gpu_varlen_sweep_bf16 gpu_varlen_sweep_f16 gpu_varlen_sweep_f32 gpu_varlen_paged_decode gpu_decode; do
     timeout 70 bin/gpu $t --exact --nocapture > "$R/t_$t.log" 2>&1; echo "$t rc=$?"; grep -E "^$t:" "$R/t_$t.log" | tail -1 | cut -c1-220
   done
   timeout 40 compute-sanitizer --tool memcheck bin/gpu gpu_sanitizer_varlen --exact > "$R/san_varlen.log" 2>&1; echo "memcheck varlen rc=$?"; grep -E "SUMMARY|test result" "$R/san_varlen.log" | tail -2
   CRITERION_HOME=/tmp/crit-pd timeout 45 bin/bench 'cuda_paged_decode_bf16' --bench --warm-up-time 0.5 --measurement-time 1 --sample-size 10 --noplot > "$R/pd.log" 2>&1; echo "paged bench rc=$?"; medians /tmp/crit-pd | tee "$R/medians.txt")
}
archived body
