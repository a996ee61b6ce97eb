# Session 52, call 4: how much of the 32×4096 decode's time is the tile's arithmetic. Pack
# s52a's bench with decode_sm80 images (lab/fatbin-variant.sh, this checkout): plain (no flag,
# the control for the image path), nomath (-DFATTN_DECODE_LAB_NO_MATH=1: copies and waits
# only, no QKᵀ, softmax or PV) and nopv (=2: no PV), against the embedded kernels; the
# (32,32,8,1,4096) and (8,32,8,1,8192) decode rows, 3 rounds alternating; torch's decode rows
# (cuDNN) in the same call. Outputs of nomath / nopv are wrong on purpose (timing only).
# PREDICTION: plain = embedded within ±0.3%; nomath 1.5-3% faster on 32×4096 (session 46's
# pure ring was 3.5% faster than our kernel, its 96 dependent FMAs cost it 1.1%); nopv half that.
# If nomath gains under 1%, no arithmetic cut can bring the row to cuDNN.
. lab/decode/check_ab.sh
P=s52a
F='cuda_fused_attn_bf16/b(32_h32_kv8_q1_k4096|8_h32_kv8_q1_k8192)_d128$'
I=FUSED_ATTN_LAB_KERNEL_IMAGES=decode_sm80=$L/device-pack
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  for v in plain nomath nopv; do  # the images' SASS: what each one kept
    cuobjdump -sass "$L/device-pack/dec-$v.fatbin" > /tmp/sass_$v.txt 2>&1
    echo "$v: $(grep -c HMMA /tmp/sass_$v.txt) HMMA, $(grep -c LDGSTS /tmp/sass_$v.txt) LDGSTS, $(grep -c MUFU.EX2 /tmp/sass_$v.txt) MUFU.EX2"
  done
  torch_decode
  cfg_rounds 3 "emb $P $F" "plain $P $F $I/dec-plain.fatbin" "nomath $P $F $I/dec-nomath.fatbin" "nopv $P $F $I/dec-nopv.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/cfg_medians.txt" | tee "$R/cfg_table.txt"
  grep -h "error\|Error" /tmp/cfg_*_1.log | head -5
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
