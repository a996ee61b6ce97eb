# Session 55, call 2 (pack s55base: HEAD 70abb13's binaries; fwd_sm90 images built by
# lab/fatbin-variant.sh: base = HEAD's kernels, qreg = branch s55-qreg).
# Call 1 found the set-up's move under the last P·V level or slower (+0.0 to +0.7%): the d128
# rows run at the 700 W cap (session 30: ~690 W, the SM clock 1.7-1.9 GHz), so idle cycles
# removed at a tile's edge are not time saved; energy per tile is. The change here: the plain
# d128 instance's consumers load their 64 Q rows into registers once per tile (8 ldmatrix.x4)
# and run Q·Kᵀ as wgmma with A from registers: 16 KiB less shared-memory reading per key block
# and consumer (of 80), and the loop's per-step A descriptors gone (SASS 956 -> 901 a block,
# R2UR 17 -> 1; registers up to R226, no spills).
# PREDICTION: d128 2048 unmasked -0.5 to -2% (a higher clock at the cap and fewer issue
# slots), causal -0.5 to -1.5%, 4096 / GQA 8:1 -0.5 to -1.5%; every test passes.
. lab/decode/check_ab.sh
P=s55base
ROWS='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128(_causal)?|b4_h32_kv(32|4)_q4096_k4096_d128(_causal)?)$'
IMG=FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 100 > "$R/smi.csv" &
  SMI=$!
  cfg_rounds 3 "base $P $ROWS $IMG=$L/device-pack/fwd_sm90-base.fatbin" "qreg $P $ROWS $IMG=$L/device-pack/fwd_sm90-qreg.fatbin"
  kill $SMI
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  export FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-qreg.fatbin
  pack_tests $P gpu_hopper_prefill gpu_hopper_multicast gpu_sweep_bf16 gpu_sweep_f16 gpu_hopper_varlen gpu_hopper_varlen_neighbours_stay_out gpu_varlen_matches_dense_per_sequence gpu_lse gpu_nan_in_a_query_row_stays_in_that_row gpu_nan_in_a_key_reaches_only_rows_that_see_it
  echo "tests done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P && for tool in memcheck synccheck racecheck; do
     FUSED_ATTN_MULTICAST_CASES=3 FUSED_ATTN_NAIVE_ON_CPU=1 timeout 100 compute-sanitizer --tool $tool bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_mc_$tool.log" 2>&1
     echo "$tool multicast (3 cases) rc=$?"; grep -E "SUMMARY|test result" "$R/san_mc_$tool.log" | tail -2; done)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
