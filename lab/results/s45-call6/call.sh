# Session 45 call 6: stamps of the 2048 decode under call 3's split/partials configurations
# (pack s45st2 = 4c34693 + FATTN_LAB_DECODE_STAMPS=5; FUSED_ATTN_DECODE_PARTIALS exists there).
# Call 3 measured 16 splits with per-block partials at 14.1-14.3 µs against main's 13.5-13.6,
# though call 2's stamps put 16 splits' split blocks 1.3 µs sooner done; cuDNN runs this row as
# 16 splits on 128 SMs with one partial per split (session 43 call 4). PREDICTION: at b16 the
# split blocks end ~0.3-0.5 µs after w16's (the warps' merge), and the combine's span from the
# last split store to its end is longer than main's 3.3 µs (16 lanes an item) — the loss is
# in the combine, not the split kernel.
. lab/decode/check_ab.sh
stamp() {  # LABEL [VAR=VAL ...]: two stamped runs of the bench's 2048 row
  local label="$1"; shift
  for run in 1 2; do
    (cd /tmp/s45st2 && env "$@" timeout 60 bin/lab_decode_stamps 1 32 8 2048 128 > "$R/stamps_${label}_$run.txt" 2>&1)
    echo "$label run $run rc=$?"; grep -E "^# (split phase (  1|  2| 18)|split warps|combine)" "$R/stamps_${label}_$run.txt"
  done
}
body() {
  gpu_info
  unpack s45st2
  stamp w8 X=1
  stamp w16 FUSED_ATTN_DECODE_SPLITS=16
  stamp b16 FUSED_ATTN_DECODE_SPLITS=16 FUSED_ATTN_DECODE_PARTIALS=block
  stamp b8 FUSED_ATTN_DECODE_PARTIALS=block
}
archived body
