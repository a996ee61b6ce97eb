# Session 36 call 7: branch s36-side-stream (pack s36b = 32eb0aa): GPU-resident index tensors
# read for their checks on a side stream (src/cuda/indices.rs). The new ordering test, the
# varlen tests that draw device indices in half their cases, then issue 13's rows with the
# indices on the GPU (devidx) and on the CPU (hostidx), 2 rounds.
# Prediction: devidx rows from 0.55-0.77x of contiguous to within 2% of hostidx (the bench
# reuses one index tensor, whose writer finished long before, so the side read waits for
# nothing but its own copy, ~10-20 us of host time while the GPU runs queued work).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s36b "" gpu_device_indices_wait_for_their_writer gpu_packed_index_reuse gpu_varlen_sweep_bf16 \
    gpu_varlen_sweep_f16 gpu_varlen_sweep_f32 gpu_varlen_paged_decode gpu_sanitizer_varlen gpu_errors
  bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_(dev|host)idx)_|cuda_varlen_bf16/ours_(dev|host)idx' 2 s36b
}
archived body
