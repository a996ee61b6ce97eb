# Session 54, call 1. (a) The cluster occupancy probe prepared at the end of session 53
# (lab/results/s54-next/call.sh, lab/hopper/cluster_occupancy.py): max active clusters of 1, 2,
# 4, 8 CTAs and the SMs a probe grid's first wave covers, for the plain d128 (384 threads,
# 197 736 B), wide d128 (214 104 B) and plain d64 (512, 148 616 B) block shapes.
# (b) The decode's row_facts helper (lab/decode/row-facts-helper.diff applied to
# kernels/decode_sm80.cu; pack s54a built from that tree): the decode tests, varlen/paged
# decode, LSE, the sanitizer subset and the bf16/f16 sweeps on the embedded kernels, memcheck,
# then an A/B against session 53's decode image (device-pack/decode_sm80-old.fatbin, built
# from 374d5ea with lab/fatbin-variant.sh), 3 rounds alternating.
# PREDICTION: (a) pairs cover all 132 SMs; clusters of 4 leave 4-12 SMs idle. (b) tests pass;
# the A/B within ±0.5% on every decode row (same arithmetic, register allocation may move).
. lab/decode/check_ab.sh
P=s54a
OLD=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack/decode_sm80-old.fatbin
body() {
  S0=$(date +%s)
  gpu_info
  for shape in "384 197736" "384 214104" "512 148616"; do
    set -- $shape
    timeout 60 python3 lab/hopper/cluster_occupancy.py --threads $1 --smem $2 2>&1 | tee -a "$R/clusters.txt"
  done
  echo "probe done at $(( $(date +%s) - S0 )) s"
  unpack $P
  pack_tests $P gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sanitizer_subset gpu_sweep_bf16 gpu_sweep_f16
  (cd /tmp/$P && timeout 60 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_ --nocapture --test-threads=1 > "$R/san_mem.log" 2>&1
   echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/san_mem.log" | tail -2)
  echo "tests done at $(( $(date +%s) - S0 )) s"
  torch_decode
  cfg_rounds 3 "rowfacts $P $DECODE_ROWS" "old $P $DECODE_ROWS $OLD"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
