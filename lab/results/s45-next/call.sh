# Session 45 call (prepared at the end of session 44): where the 2048 decode's time goes.
# Pack s45st (lab/results/s45-next/build.sh). Prediction to write before running: which phase
# holds most of the split block's ~5.5 µs (Q landed, the 4 tiles' landings, the compute
# between them, the partial stores) and how long the combine waits after the last partial.
# Then the same with FUSED_ATTN_DECODE_SPLITS=16 (the 2-tile warps that lost in session 23).
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s45st
  for splits in unset 16; do
    if [ $splits = unset ]; then unset FUSED_ATTN_DECODE_SPLITS; else export FUSED_ATTN_DECODE_SPLITS=$splits; fi
    for run in 1 2 3; do
      (cd /tmp/s45st && timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_${splits}_$run.txt" 2>&1)
      echo "splits $splits run $run rc=$?"; grep "^#" "$R/stamps_${splits}_$run.txt"
    done
  done
  unset FUSED_ATTN_DECODE_SPLITS
}
archived body
