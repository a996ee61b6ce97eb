#!/usr/bin/env bash
# Runs the kernel lab on the GPU machine: correctness sweep, bench of our kernels and tile
# variants, PyTorch anchors in the same run, optional compute-sanitizer. Logs go to $OUT.
#   lab/run.sh [check] [bench] [torch] [sanitize] [prof] [tprof]
# prof: ncu on our production bf16 d64/d128 kernels; tprof: the same sections on torch's
# flash (FA2) kernel at (16,16,16,2048,2048,128).
# The lab binary is built here (lab/build.sh) and carried in lab/bin/ (git-ignored: name it in
# the device tool's carry). lab/README.md has the rest.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/lab-out}"; mkdir -p "$OUT"
BIN=bin/lab
[ -x "$BIN" ] || { tar -xJf bin/lab.tar.xz -C bin 2>/dev/null; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
for step in "$@"; do
  case "$step" in
    check) "$BIN" check 2>&1 | tee "$OUT/check.txt" ;;
    bench) "$BIN" bench 2>&1 | tee "$OUT/bench.txt" ;;
    torch) PYTHONUNBUFFERED=1 python3 torch_bench.py 2>&1 | tee "$OUT/torch.txt" ;;
    sanitize)
      LAB_SMALL=1 compute-sanitizer --tool memcheck "$BIN" check > "$OUT/memcheck.txt" 2>&1; tail -2 "$OUT/memcheck.txt"
      LAB_SMALL=1 compute-sanitizer --tool racecheck --racecheck-report all "$BIN" check > "$OUT/racecheck.txt" 2>&1
      grep -v " ok$" "$OUT/racecheck.txt" | head -40 ;;
    prof)
      ncu --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
          --section InstructionStats --section Occupancy --section LaunchStats -k regex:fattn_fwd "$BIN" prof \
          > "$OUT/ncu.txt" 2>&1; grep -E "fattn_fwd|Stall|Warp Cycles|Issued|Eligible|Active Warps|Pipe|Registers|Occupancy|Duration" "$OUT/ncu.txt" | head -80 ;;
    tprof)
      ncu --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
          --section InstructionStats --section Occupancy --section LaunchStats -k regex:flash_fwd \
          --launch-skip 2 --launch-count 1 python3 torch_bench.py prof > "$OUT/ncu-torch.txt" 2>&1
      grep -E "flash_fwd|Stall|Warp Cycles|Issued|Eligible|Active Warps|Pipe|Registers|Occupancy|Duration" "$OUT/ncu-torch.txt" | head -60 ;;
  esac
done
