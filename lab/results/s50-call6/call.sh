# Session 50, call 6 (the session's last device seconds): K-only multicast. Pack s50w
# (209c316) with fwd_sm90 images through FUSED_ATTN_LAB_KERNEL_IMAGES, built from 3af0c57+
# (kernels equal to 209c316's but for the lab macro): mcv1 (FATTN_SM90_LAB_MC_V=1, the
# default: K and V multicast; must tie the embedded image) and mcv0 (only K multicast: each CTA
# loads its whole V tile and releases V's stages to its own producer, so the pair couples on K
# alone; V's release comes a whole softmax after K's). First gpu_hopper_multicast with mcv0,
# then the three unmasked d128 rows (2048 plain, 4096 and GQA 8:1 wide), 2 rounds.
# PREDICTION: mcv0 between mcv1 and no multicast if the L2 bytes dominate (+0.5 to +1.5%);
# faster than mcv1 (-0.5 to -2%) if V's late release is what holds the pair back.
. lab/decode/check_ab.sh
body() {
  S0=$(date +%s)
  gpu_info
  unpack s50w
  I="$L/device-pack"
  (cd /tmp/s50w && cat COMMIT | head -1
   FUSED_ATTN_LAB_KERNEL_IMAGES="fwd_sm90=$I/fwd_sm90-mcv0.fatbin" timeout 60 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/tests.log" 2>&1; echo "gpu_hopper_multicast [mcv0] rc=$?"
   grep -E "test result|panicked|cases" "$R/tests.log" | cut -c1-240)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  envab s50w 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128)$' 2 \
    FUSED_ATTN_LAB_KERNEL_IMAGES "base=unset mcv1=fwd_sm90=$I/fwd_sm90-mcv1.fatbin mcv0=fwd_sm90=$I/fwd_sm90-mcv0.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
