# Session 62, call 1: the sm_80 prefill and backward as one instance per dtype and head dim but
# d64's prefill (pack s62a: the softcap/ALiBi code behind a run-time switch; the backward's
# element pass instantiated per arithmetic under one uniform branch per tile; the d128 `_l`
# entries expanded from the instance list with its variant) against pack s62base (= s60b's code,
# rebuilt on this session's VM), on an H200 (no H100 lent). Decode untouched.
# 1. Speed, 2 rounds A B / B A: the sm_80 prefill forced (FUSED_ATTN_CUDA_KERNELS=sm80, the A100
#    proxy: the sm_90 cubin of the compute_80 code), d64 (unchanged code: the control), d128,
#    d256, GQA 4096 d128, causal and not; the sm_80 backward forced, d64 and d128.
# 2. Correctness of s62a: the sweeps with every problem forced onto the sm_80 kernels (softcap
#    and ALiBi cases take the switch's other side), then the default-path tests.
# 3. lab/tools/build_time.sh of s62a's units on two host vCPUs, if the time allows.
# PREDICTION: prefill d128/d256/GQA within ±0.5% (session 61's merged d128 was -0.2/-0.4%),
# d64 within ±0.3% (same code); backward d64 and d128 within ±1% (the plain path's SASS is the
# plain kernel's plus one branch: 4 032 instructions for both paths against 2 968, no predicated
# MUFU, 252 registers against 240, no spill, one 256-thread block per SM either way); every
# test passes; the build on two host vCPUs 20-25% below session 61's 141-165 s (this VM:
# 94.3 s against 120.8 s).
. lab/decode/check_ab.sh
N=s62a; O=s62base
PRE='cuda_fused_attn_bf16/b(16_h16_kv16_q2048_k2048_d(64|128|256)|4_h32_kv4_q4096_k4096_d128)(_causal)?$'
BWD='cuda_bwd_fused_bf16/b(16_h16_kv16_q2048_k2048_d(64|128)|4_h9_kv9_q2048_k2048_d64)(_causal)?$'
body() {
  S0=$(date +%s)
  gpu_info
  cfg_rounds 2 "old80 $O $PRE FUSED_ATTN_CUDA_KERNELS=sm80" "new80 $N $PRE FUSED_ATTN_CUDA_KERNELS=sm80"
  echo "prefill A/B done $(( $(date +%s) - S0 )) s"
  cfg_rounds 2 "oldbwd $O $BWD FUSED_ATTN_CUDA_KERNELS=sm80" "newbwd $N $BWD FUSED_ATTN_CUDA_KERNELS=sm80"
  echo "backward A/B done $(( $(date +%s) - S0 )) s"
  (cd /tmp/$N && head -3 COMMIT
   for t in gpu_sweep_f16 gpu_sweep_bf16 gpu_sweep_f32 gpu_grad_sweep_bf16 gpu_grad_sweep_f16 gpu_varlen_sweep_bf16 gpu_lse gpu_large_scale gpu_hopper_backward; do
     FUSED_ATTN_CUDA_KERNELS=sm80 timeout 90 bin/gpu $t --exact --nocapture > "$R/sm80_$t.log" 2>&1; echo "sm80 $t rc=$?"
     grep -hE "^test result|panicked|cases" "$R/sm80_$t.log" | cut -c1-200 | head -3
   done
   for t in gpu_decode gpu_hopper_prefill gpu_hopper_backward gpu_varlen_paged_decode gpu_errors gpu_output_poisoned; do
     timeout 120 bin/gpu $t --exact --nocapture > "$R/auto_$t.log" 2>&1; echo "auto $t rc=$?"
     grep -hE "^test result|panicked" "$R/auto_$t.log" | cut -c1-200 | head -3
   done)
  echo "tests done $(( $(date +%s) - S0 )) s"
  if (( $(date +%s) - S0 < 380 )); then taskset -c 0,1 bash lab/tools/build_time.sh lab/bin/gen 2; fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
