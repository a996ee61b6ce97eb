# Session 55, call 1 (pack s55base: HEAD 70abb13's binaries; fwd_sm90 images built by
# lab/fatbin-variant.sh: base = HEAD's kernels, early = branch s55-early-item).
# The change: every persistent instance names its next item (strided: strided_item; drawn: the
# producer's slot) and sets it up while the consumer waits for the item's last P·V, instead of
# at the next loop top, between its epilogue and its next Q·Kᵀ (tensor cores idle there).
# Session 47's stamps put that set-up at 0.35-0.37 µs of the d128 tile's 1.76 µs fixed cost.
# PREDICTION: d128 2048 unmasked -0.8 to -1.4% (0.35 µs of a 26.3 µs tile), 4096 / GQA -0.4 to
# -0.7%, 16k (wide) -0.2%; the drawn (causal) grids: d64 2048 causal -1 to -2% (short tiles,
# 3 consumers), d128 causal -0.5 to -1%; d64 2048 unmasked -0.5 to -1%. Every test passes.
. lab/decode/check_ab.sh
P=s55base
ROWS='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$'
IMG=FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  cfg_rounds 3 "base $P $ROWS $IMG=$L/device-pack/fwd_sm90-base.fatbin" "early $P $ROWS $IMG=$L/device-pack/fwd_sm90-early.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  export FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-early.fatbin
  pack_tests $P gpu_hopper_prefill gpu_hopper_multicast gpu_sweep_bf16 gpu_sweep_f16 gpu_lse gpu_output_poisoned
  echo "tests done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P && for tool in memcheck synccheck; do
     FUSED_ATTN_HOPPER_CASES=0 FUSED_ATTN_NAIVE_ON_CPU=1 timeout 100 compute-sanitizer --tool $tool bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/san_hp_$tool.log" 2>&1
     echo "$tool hopper_prefill (persistent cases) rc=$?"; grep -E "SUMMARY|test result" "$R/san_hp_$tool.log" | tail -2; done
   FUSED_ATTN_MULTICAST_CASES=2 FUSED_ATTN_NAIVE_ON_CPU=1 timeout 120 compute-sanitizer --tool racecheck bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_mc_racecheck.log" 2>&1
   echo "racecheck multicast (2 cases) rc=$?"; grep -E "SUMMARY|test result" "$R/san_mc_racecheck.log" | tail -2)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
