# Session 45 call (prepared at the end of session 44): where the 2048 decode's time goes.
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
  for st in 3 4; do
    (cd /tmp/s45r4 && FUSED_ATTN_DECODE_STAGES=$st timeout 120 ncu --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy -k regex:fattn_decode -s 2 -c 4 \
      bin/lab_decode_stamps 1 32 8 2048 128 > "$R/ncu_ring4_st$st.txt" 2>&1)
    echo "ncu stages $st rc=$?"
    grep -E "fattn_decode|Duration|Stall|Warp Cycles|Mem Busy|Max Bandwidth|DRAM Through|L2 Hit|Shared Memory Config" "$R/ncu_ring4_st$st.txt" | head -60
  done
}
archived body
