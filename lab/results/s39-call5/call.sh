# Session 39 call 5: the gradient tests under the floor with the recomputed-score term (pack
# s39b = 87f3d4e; kernels as s39a): call 4's failing seed of gpu_grad_large_head_dim again,
# then fresh seeds of it and of every GPU gradient test.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s39b
  (cd /tmp/s39b && head -3 COMMIT
   FUSED_ATTN_SEED=10071300584437473092 timeout 120 bin/gpu gpu_grad_large_head_dim --exact --nocapture > "$R/t_seeded.log" 2>&1
   echo "seeded rc=$?"; grep -hE "^gpu_|FAIL|^    d" "$R/t_seeded.log" | cut -c1-300)
  gpu_tests s39b "" gpu_grad_large_head_dim gpu_grad_sweep_f32 gpu_grad_sweep_f16 gpu_grad_sweep_bf16 gpu_grad_packed gpu_hopper_backward gpu_lse
}
archived body
