# Session 56, call 3 (pack s56b: 1eeeb56). Call 1 put the decode's two QK^T chains at -2.0% on
# the 2048 row (4 rounds); call 2's A/B of the landed source against HEAD's image was level
# (+0.6% / -0.1%, 2 rounds). The two chains images differ only in scheduling: call 1's was
# built with the ring pointer declared before the copy lambda (`my_ring` first); chainsr is
# the landed source with that one move, and its d64/d128 SASS is call 1's chains image's,
# instruction for instruction. Three images, 3 rounds alternating: base (HEAD 312a371's
# decode), chains (the pack's own), chainsr. Then racecheck and memcheck of
# gpu_sanitizer_subset with chainsr's decode (the pack's fwd/bwd kernels: d696618's Q in
# registers included; session 55's plan item 3), and the float64 oracle.
# PREDICTION: chainsr -1 to -2% on the 2048 row against base, chains level; 32x4096 and
# 8x8192 within +-0.3%; racecheck 0 hazards, memcheck 0 errors; oracle 24/24.
. lab/decode/check_ab.sh
P=s56b
ROWS='cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|1_h32_kv8_q1_k2048|8_h32_kv8_q1_k8192|1_h32_kv8_q1_k32768)_d128$'
IMG=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  cfg_rounds 3 "base $P $ROWS $IMG=$L/device-pack/dec-base.fatbin" "chains $P $ROWS" "chainsr $P $ROWS $IMG=$L/device-pack/dec-chainsr.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "A/B done at $(( $(date +%s) - S0 )) s"
  export FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack/dec-chainsr.fatbin
  (cd /tmp/$P
   FUSED_ATTN_NAIVE_ON_CPU=1 timeout 210 compute-sanitizer --tool racecheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_racecheck.log" 2>&1
   echo "racecheck subset rc=$? at $(( $(date +%s) - S0 )) s"; grep -E "SUMMARY|test result|cases" "$R/san_racecheck.log" | cut -c1-220 | tail -3
   FUSED_ATTN_NAIVE_ON_CPU=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_memcheck.log" 2>&1
   echo "memcheck subset rc=$? at $(( $(date +%s) - S0 )) s"; grep -E "SUMMARY|test result|cases" "$R/san_memcheck.log" | cut -c1-220 | tail -3
   timeout 60 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
   FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 60 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
   echo "oracle rc=$?"; grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | cut -c1-220 | head -5)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
