# Prepared at the end of session 52 (not run): the transposed QKᵀ (FATTN_DECODE_TRANSPOSED_QK=1,
# kernels/decode_sm80.cu, compile-checked only: ptxas bf16 d128 dense 237 registers, no
# spills) on a GPU. First build its image and a fresh pack on the dev machine:
#   lab/pack-h90.sh s53a && mv device-pack/h90-s53a.tar.xz device-pack/h90-s53a-9.tar.xz
#   lab/fatbin-variant.sh decode_sm80 device-pack/dec-tqk.fatbin -DFATTN_DECODE_TRANSPOSED_QK=1
# then run with carry ["device-pack/h90-s53a-9.tar.xz", "device-pack/dec-tqk.fatbin"].
# The decode tests run with the image loaded (the crate reads FUSED_ATTN_LAB_KERNEL_IMAGES),
# then memcheck, then the A/B against the embedded kernels (the transposed PV alone), 3 rounds.
# PREDICTION: tests pass; (32,32,8,1,4096) 0.3-0.8% faster than the embedded (call 4 bound
# for QKᵀ + softmax: ~1.0%); 8×8192 and 32k likewise; Sq 4 (16 rows) unchanged.
. lab/decode/check_ab.sh
P=s53a
IMG=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack/dec-tqk.fatbin
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  export "$IMG"
  pack_tests $P gpu_decode gpu_varlen_paged_decode gpu_lse gpu_sanitizer_subset gpu_sweep_bf16 gpu_sweep_f16
  (cd /tmp/$P && timeout 60 compute-sanitizer --tool memcheck --error-exitcode 97 bin/gpu gpu_sanitizer_ --nocapture --test-threads=1 > "$R/san_mem.log" 2>&1
   echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/san_mem.log" | tail -2)
  unset FUSED_ATTN_LAB_KERNEL_IMAGES
  echo "tests done at $(( $(date +%s) - S0 )) s"
  torch_decode
  cfg_rounds 3 "tpv $P $DECODE_ROWS" "tqk $P $DECODE_ROWS $IMG"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
