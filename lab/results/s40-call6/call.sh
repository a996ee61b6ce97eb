# Session 40 call 6: the panic hunt (tests/panic_hunt.rs) with every input on the GPU
# (PANIC_HUNT_DEVICE=cuda; pack s40ph: that test binary alone, built with the cuda feature,
# fb81a78's library): GPU index tensors take the GPU read path (src/cuda/indices.rs), the
# kernels' launch checks run, the NaN and reference checks compare on the device.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s40ph
  (cd /tmp/s40ph && head -3 COMMIT && PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} timeout 400 bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1; echo "hunt rc=$?")
  grep -nE "after |PANICS|SLOW|SUSPICIOUS|INTERNAL|ERRORS ON|test result|total calls|CHILD" "$R/hunt.log" | head -30
  sed -n '/^PANICS/,/^SLOW/p' "$R/hunt.log" | head -40
}
archived body
# Outcome (three runs, the device budget ran out in the third):
# - r8: the harness's own panic (candle 0.11 cannot allocate an empty CUDA buffer: a 0-byte
#   cuMemAllocAsync is an invalid value); fixed with to_dev (empty views).
# - r9: another harness panic (an empty block table converted on CUDA); fixed.
# - r10: **CUDA_ERROR_ILLEGAL_ADDRESS** surfaced at the harness's next allocation after
#   attention_varlen / attention_varlen_with_lse on one random packed case (tests/panic_hunt.rs
#   line 1440 at 99065c4), then the process hung until the time limit. Which case is not known
#   (no trace was on). OPEN DEFECT: rerun with PANIC_HUNT_TRACE=1 (the last call's label in
#   /tmp/panic_hunt_current) and under compute-sanitizer memcheck.
# After the calls, a read-only audit (a helper agent) replayed the hunt's draws on the CPU and
# named the likely case: packed seed 500010 (f32, d 1, paged, max_seqlen_q = i32::MAX) on the
# sm_80 f32 kernel, where kernels/common/grid.cuh's query-block count wrapped in i32 (block 0
# at row INT_MIN). Fixed on the host in a1e91ba and 8aea1bc; not yet confirmed on a GPU
# (lab/results/s41-next/call.sh).
