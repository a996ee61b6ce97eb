# Session 56, call 1 (pack s56a: HEAD 312a371's binaries; decode_sm80 images built by
# lab/fatbin-variant.sh: base = HEAD's kernels; chains, split and both from branch s56-dec).
# The 32x4096 decode is the one row of issue 14 short of cuDNN (0.997-1.005 over sessions
# 53-55). Session 52 put the tile's arithmetic at 1.8% of it (no-math image), and session 46
# a pure read's 96 dependent FMAs a tile at 1.1%: the time a warp holds a stage while it
# computes costs, though the DRAM queue is deep. Two lab knobs:
# - chains (FATTN_DECODE_QK_CHAINS=2): QK^T in two independent accumulator chains of 4 mma
#   instead of one of 8 (the tile's critical path ~120 of ~550 cycles shorter);
# - split (FATTN_DECODE_SPLIT_RING=1): a stage's K half is refilled right after the tile's
#   QK^T and its V half after PV, each its own cp.async group (K copies ~60% of a tile's
#   arithmetic earlier; the V wait moves to just before PV).
# PREDICTION: 32x4096: chains -0.2 to -0.5%, split -0.3 to -1%, both -0.5 to -1.2%; the 2048,
# 8x8192 rows within +-0.5%; every decode test passes on the both image.
. lab/decode/check_ab.sh
P=s56a
ROWS='cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|1_h32_kv8_q1_k2048|8_h32_kv8_q1_k8192|1_h32_kv8_q1_k32768)_d128$'
IMG=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  cfg_rounds 4 "base $P $ROWS $IMG=$L/device-pack/dec-base.fatbin" "chains $P $ROWS $IMG=$L/device-pack/dec-chains.fatbin" \
    "split $P $ROWS $IMG=$L/device-pack/dec-split.fatbin" "both $P $ROWS $IMG=$L/device-pack/dec-both.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  torch_decode
  export FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack/dec-both.fatbin
  echo "== tests on both (every knob's code)"
  pack_tests $P gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sweep_bf16
  echo "tests done at $(( $(date +%s) - S0 )) s"
  unset FUSED_ATTN_LAB_KERNEL_IMAGES
  (cd /tmp/$P && FUSED_ATTN_NAIVE_ON_CPU=1 timeout $(( 560 - ($(date +%s) - S0) )) compute-sanitizer --tool racecheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck subset (HEAD) rc=$?"; grep -E "SUMMARY|test result" "$R/san_racecheck.log" | tail -2)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
