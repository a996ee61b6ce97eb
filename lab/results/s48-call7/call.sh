# Session 48, call 7: the tests this session's calls left out, on pack s48m (745e27b's code):
# the sm_80 forward in the final form of session 47's grid.cuh (never run on a GPU: f32, and
# bf16 with FUSED_ATTN_CUDA_KERNELS=sm80), the error, NaN, poison, empty-input and large-scale
# tests, and the backward sweeps (whose kernels did not change).
# PREDICTION: all pass.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s48m
  (cd /tmp/s48m && head -1 COMMIT
   run() { local env="$1" t="$2"; env $env timeout 60 bin/gpu "$t" --exact --nocapture > "$R/t_${t}_${env%%=*}.log" 2>&1
     echo "$t [$env] rc=$?"; grep -E "test result|panicked|cases" "$R/t_${t}_${env%%=*}.log" | tail -2 | cut -c1-220; }
   run X=1 gpu_sweep_f32
   run FUSED_ATTN_CUDA_KERNELS=sm80 gpu_sweep_bf16
   run FUSED_ATTN_CUDA_KERNELS=sm80 gpu_varlen_sweep_bf16
   run X=1 gpu_varlen_sweep_f32
   for t in gpu_errors gpu_output_poisoned gpu_poison_reaches_allocations gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it gpu_empty_inputs gpu_large_scale gpu_hopper_backward gpu_grad_sweep_bf16; do
     run X=1 $t
     [ $(( $(date +%s) - S0 )) -gt 200 ] && { echo "stopping at 200 s"; break; }
   done)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
