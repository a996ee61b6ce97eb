# Session 52, call 5: pack s52b (the transposed PV for decode blocks of at most 8 rows at
# head dim 128). The decode tests on both kernel generations, the sweeps, memcheck of the
# sanitizer subsets; torch's decode rows (cuDNN); the decode rows against the same code built
# with FATTN_DECODE_TRANSPOSED_PV=0 (image dec-old), 2 rounds alternating; then issue 14's
# table if the time allows.
# PREDICTION: tests pass, memcheck 0 errors; 32×4096 0.3-0.6% faster than dec-old (call 4's
# bound for PV: 0.8%), 8×8192 and 32k likewise (both 4-row tiles), 2048 and Sq 4 (16 rows)
# unchanged.
. lab/decode/check_ab.sh
P=s52b
I=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  pack_tests $P gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sanitizer_subset gpu_sweep_bf16 gpu_sweep_f16 gpu_varlen_sweep_bf16
  echo "tests done at $(( $(date +%s) - S0 )) s"
  (cd /tmp/$P && timeout 60 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_ --nocapture --test-threads=1 > "$R/san_mem.log" 2>&1
   echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/san_mem.log" | tail -2)
  torch_decode
  cfg_rounds 2 "tpv $P $DECODE_ROWS" "old $P $DECODE_ROWS $I/dec-old.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "a/b done at $(( $(date +%s) - S0 )) s"
  if [ $(( $(date +%s) - S0 )) -lt 290 ]; then table_runs $P; table_md; fi
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
