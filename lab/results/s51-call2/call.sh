# Session 51, call 2: pack s51a (ed58102: K-only multicast on the plain d128 instance) with a
# fwd_sm90 image wmcv0 (FATTN_SM90_LAB_WIDE_MC_V=0: the wide d128 instance multicasts K only
# too; built from 2c1f9d2). First gpu_hopper_multicast with wmcv0 (its 4096-key case runs
# the wide instance), then three configs on the unmasked 4096 (kv32, GQA 8:1) and 16k d128
# rows, 2 rounds, the order reversed on round 2: rule (the wide instance K+V multicast from
# 4096 keys), plain (FUSED_ATTN_SM90_WIDE_PADDING=1.0: 4096 on the plain K-only instance; 16k
# goes plain too: 94 x 176 = 16544 keys, 1% over 1.0) and wk (the rule with
# the wmcv0 image). Then racecheck (every hazard's kernel named) and synccheck of all six
# gpu_hopper_multicast cases on the default image.
# PREDICTION: wmcv0 passes; wk within ±0.5% of rule at 4096 (session 50 call 6: -0.4 / +0.8%)
# and 16k; plain 0.5% ahead of rule at 4096 again (call 1), 1.4% behind at 16k. racecheck:
# hazards only in cuBLAS's nvjet kernels; synccheck 0 errors.
. lab/decode/check_ab.sh
P=s51a
ROWS='cuda_fused_attn_bf16/(b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128)$'
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  I="$L/device-pack"
  (cd /tmp/$P && head -1 COMMIT
   FUSED_ATTN_LAB_KERNEL_IMAGES="fwd_sm90=$I/fwd_sm90-wmcv0.fatbin" timeout 60 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/tests.log" 2>&1; echo "gpu_hopper_multicast [wmcv0] rc=$?"
   grep -E "test result|panicked|cases" "$R/tests.log" | cut -c1-240)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  cfg_rounds 2 "rule $P $ROWS" "plain $P $ROWS FUSED_ATTN_SM90_WIDE_PADDING=1.0" "wk $P $ROWS FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$I/fwd_sm90-wmcv0.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt"
  echo "configs done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P
   timeout 200 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 400 bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_race.log" 2>&1
   echo "racecheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_race.log" | cut -c1-200 | tail -3
   echo "hazard accesses by kernel:"; grep -oE "(Read|Write) Thread \([0-9,]+\) at [A-Za-z0-9_]+" "$R/san_race.log" | awk '{print $NF}' | sort | uniq -c | head -20
   echo "racecheck done at $(( $(date +%s) - S0 )) s"
   timeout 150 compute-sanitizer --tool synccheck bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_sync.log" 2>&1
   echo "synccheck rc=$?"; grep -E "SUMMARY|test result|cases" "$R/san_sync.log" | cut -c1-200 | tail -3)
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
