# Session 49, call 4: why the K/V multicast (call 3) runs the unmasked d128 rows 9-20% slower
# at a higher clock. The pair's CTAs meet at every stage through each other's "empty"
# barriers: each consumer warp's release arrives remotely with .release.cluster, and each
# producer waits with .acquire.cluster and a 1 ms suspend hint. Lab images of fwd_sm90
# (kernel-only macros, pack s49mc): mcw1 spin + acquire.cluster; mcw2 hint + default
# semantics; mcw3 spin + default; a1 remote arrive with the default (CTA-scope release, as
# CUTLASS's ClusterBarrier::arrive) + as mc; a1w2 / a1w3 both default (hint / spin).
# Against mc (the pack's default) and nomc (FUSED_ATTN_SM90_TILE_RULES without multicast).
# PREDICTION: the cluster-scope release in the consumers' path (a fence at cluster scope
# before each remote arrival, 2 per key block and warp) is most of the loss: a1* within 3%
# of nomc or faster; the wait's form changes little.
. lab/decode/check_ab.sh
NOMC=dynamic,lightest-last,pairs,persistent,shift,small-grid,streamk,tail,wide
F='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$'
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49mc
  I="$L/device-pack"
  cfgs=("mc s49mc $F" "nomc s49mc $F FUSED_ATTN_SM90_TILE_RULES=$NOMC")
  for v in mcw1 mcw2 mcw3 a1 a1w2 a1w3; do cfgs+=("$v s49mc $F FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$I/fwd_sm90-$v.fatbin"); done
  cfg_rounds 2 "${cfgs[@]}" > /dev/null
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt"
  # the best image's correctness on the multicast cases
  (cd /tmp/s49mc && FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$I/fwd_sm90-a1.fatbin timeout 120 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/tests_a1.log" 2>&1; echo "a1 gpu_hopper_prefill rc=$?"; grep -E "cases|test result" "$R/tests_a1.log" | cut -c1-200)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
