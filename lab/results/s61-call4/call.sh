# Session 61, call 4: the sm_80 kernels as one instance per dtype and head dim (pack s61a = 54d8e9e:
# the softcap/ALiBi code behind a run-time switch, 35 fewer instances) against pack s60b (a plain
# and a _mods kernel each), on an H200 (no H100 lent):
# 1. Speed of the plain path, same binary layout, alternating 2 rounds A B / B A: the sm_80
#    prefill (FUSED_ATTN_CUDA_KERNELS=sm80: the sm_90 cubin of the compute_80 code, the proxy
#    for an A100 here), the decode rows of issue 14 (the Hopper decode path is decode_sm80's),
#    the sm_80 backward (forced).
# 2. Correctness of s61a: the sweeps with every problem forced onto the sm_80 kernels (softcap
#    and ALiBi cases take the run-time switch's other side), then the default-path tests.
# 3. If the device time allows: lab/tools/build_time.sh of 54d8e9e's units on two host vCPUs.
# PREDICTION: every row within ±0.5% of s60b (the plain path's code is the same but for one
# uniform branch per key block; registers per entry: d64 234 -> 254 and d32 184 -> 212 at
# sm_80, no new spills in the dense entries, occupancy unchanged); all tests pass; the
# build on two host vCPUs ~40% below call 2-3's 141-165 s.
. lab/decode/check_ab.sh
N=s61a; O=s60b
PRE='cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048_d(64|128)|4_h32_kv4_q4096_k4096_d128)(_causal)?$'
DEC="$DECODE_ROWS"
BWD='cuda_bwd_fused_bf16/b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?$'
body() {
  S0=$(date +%s)
  gpu_info
  cfg_rounds 2 "old80 $O $PRE FUSED_ATTN_CUDA_KERNELS=sm80" "new80 $N $PRE FUSED_ATTN_CUDA_KERNELS=sm80"
  echo "prefill A/B done $(( $(date +%s) - S0 )) s"
  cfg_rounds 2 "olddec $O $DEC" "newdec $N $DEC"
  echo "decode A/B done $(( $(date +%s) - S0 )) s"
  cfg_rounds 2 "oldbwd $O $BWD FUSED_ATTN_CUDA_KERNELS=sm80" "newbwd $N $BWD FUSED_ATTN_CUDA_KERNELS=sm80"
  echo "backward A/B done $(( $(date +%s) - S0 )) s"
  (cd /tmp/$N && head -3 COMMIT
   for t in gpu_sweep_f16 gpu_sweep_bf16 gpu_sweep_f32 gpu_grad_sweep_bf16 gpu_varlen_sweep_bf16 gpu_lse gpu_large_scale; do
     FUSED_ATTN_CUDA_KERNELS=sm80 timeout 90 bin/gpu $t --exact --nocapture > "$R/sm80_$t.log" 2>&1; echo "sm80 $t rc=$?"
     grep -hE "^test result|panicked|cases" "$R/sm80_$t.log" | cut -c1-200 | head -3
   done
   for t in gpu_decode gpu_hopper_prefill gpu_hopper_backward gpu_varlen_paged_decode gpu_errors gpu_output_poisoned; do
     timeout 120 bin/gpu $t --exact --nocapture > "$R/auto_$t.log" 2>&1; echo "auto $t rc=$?"
     grep -hE "^test result|panicked" "$R/auto_$t.log" | cut -c1-200 | head -3
   done)
  # 3. The build on two of the host's vCPUs (call 2-3's method), if the device time allows.
  if (( $(date +%s) - S0 < 330 )); then taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen 2; fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
