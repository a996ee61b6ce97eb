# Session 45 call 2 (call 1 = this script with a stamps example that read unmangled names: no stamps; its ncu sections kept): where the 2048 decode's time goes.
# Packs s45st (main + stamps, lab/results/s45-next/build.sh) and s45r4 (session 44's 4-stage
# ring + the same stamps, build_ring4.sh). Write the prediction before running: which phase
# holds most of a split block's ~5.5 µs (Q landed, the 4 tiles' landings, the compute
# between them, the partial stores), how long the combine waits after the last partial, and
# which phase the 4-stage ring doubles (session 44 call 3: 16.96 against 9.65 µs in ncu).
# Then main at 16 splits (the 2-tile warps that lost in session 23).
# PREDICTION (written 2026-11-30 before the call): in main's 8-split launch the first split
# block enters ~2-3 µs after the launch's CPU side (not visible here); inside a block, Q lands
# ~0.9-1.2 µs after entry (one DRAM round trip plus the TMA descriptor fetch), tile 0 lands
# with Q, each later tile ~0.5-0.8 µs after the previous one is done (the ring refills behind
# compute), compute per tile ~0.15-0.3 µs, partials stored ~4-5 µs after entry; the combine's
# blocks enter early (PDL) and their wait releases 1-2 µs after the last partial store (grid
# completion), end ~0.5 µs after that. The 4-stage ring: the landings of tiles 1-3 come
# together but late (the whole 128 KB per SM queued at once), the landing phase doubles.
# Also: ncu WarpStateStats + MemoryWorkloadAnalysis of the ring4 pack's split kernel at 3 and
# 4 stages, for the stall reason behind the doubling.
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
  M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_active.max,smsp__cycles_active.avg'
  for cfg in "s45st main X=1" "s45st main16 FUSED_ATTN_DECODE_SPLITS=16" "s45r4 st3 FUSED_ATTN_DECODE_STAGES=3" "s45r4 st4 X=1"; do
    set -- $cfg
    (cd /tmp/$1 && env $3 timeout 120 ncu --metrics "$M" -k regex:fattn_decode -s 2 -c 4 \
      bin/lab_decode_stamps 1 32 8 2048 128 > "$R/ncu_stall_$2.txt" 2>&1)
    echo "ncu $2 rc=$?"
  done
}
archived body
