# Session 45 call (prepared at the end of session 44): where the 2048 decode's time goes.
# Packs s45st (main + stamps, lab/results/s45-next/build.sh) and s45r4 (session 44's 4-stage
# ring + the same stamps, build_ring4.sh). Write the prediction before running: which phase
# holds most of a split block's ~5.5 µs (Q landed, the 4 tiles' landings, the compute
# between them, the partial stores), how long the combine waits after the last partial, and
# which phase the 4-stage ring doubles (session 44 call 3: 16.96 against 9.65 µs in ncu).
# Then main at 16 splits (the 2-tile warps that lost in session 23).
. lab/decode/check_ab.sh
stamp() {  # LABEL PACK [VAR=VAL ...]: three runs of the bench's 2048 row, stamped
  local label="$1" pack="$2"; shift 2
  unpack "$pack" || return 1
  for run in 1 2 3; do
    (cd "/tmp/$pack" && env "$@" timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_${label}_$run.txt" 2>&1)
    echo "$label run $run rc=$?"; grep "^#" "$R/stamps_${label}_$run.txt"
  done
}
body() {
  gpu_info
  stamp main s45st X=1
  stamp main16 s45st FUSED_ATTN_DECODE_SPLITS=16
  stamp ring4 s45r4 X=1
  stamp ring4s3 s45r4 FUSED_ATTN_DECODE_STAGES=3
}
archived body
