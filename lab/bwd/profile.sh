#!/usr/bin/env bash
# ncu of the backward's kernels at (16,16,16,2048,2048,128) bf16 non-causal, ours (the bench
# binary of a device pack) and PyTorch FA2's, for the lab's record. On the GPU machine:
#   bash lab/bwd/profile.sh device-pack/fused-attn-device.tar.xz $OUT
set -uo pipefail
PACK="$1"; OUT="$2"
W=/tmp/bwdprof; rm -rf "$W"; mkdir -p "$W"; tar -xJf "$PACK" -C "$W"
CU13_LIB="$(python3 -c 'import nvidia, os; print(next(os.path.join(p, "cu13", "lib") for p in nvidia.__path__ if os.path.isdir(os.path.join(p, "cu13", "lib"))))')"
export LD_LIBRARY_PATH="$CU13_LIB:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis)
# Stall reasons per issued instruction, the tensor pipe and shared-memory wavefronts.
M=smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
for s in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected lg_throttle dispatch_stall selected; do
  M="$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
SECTIONS+=(--metrics "$M")
# The bench runs every shape's backward once before criterion's filter applies, so launches
# are counted from the first shape: the main kernel's first d128 launch is this shape's
# (CUDA_BWD_SHAPES order; the large-smem `_l` entry on an H100, the 99 KiB one with
# FUSED_ATTN_BWD_LARGE_TILES=0). A --launch-skip over 'fattn_bwd' caught a d64 kernel.
ncu --clock-control none --kernel-name regex:'fattn_bwd_bf16_d128' --launch-skip 0 --launch-count 1 "${SECTIONS[@]}" \
  "$W/bin/bench" 'cuda_bwd_fused_bf16/b16_h16_kv16_q2048_k2048_d128$' --bench --warm-up-time 0.1 \
  --measurement-time 0.5 --sample-size 10 --noplot >"$OUT/ncu-ours.txt" 2>&1
cat >"$W/fa2.py" <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(16, 16, 2048, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
g = torch.randn(16, 16, 2048, 128, device="cuda", dtype=torch.bfloat16)
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    out = F.scaled_dot_product_attention(q, k, v)
    for _ in range(3):
        out.backward(g, retain_graph=True)
torch.cuda.synchronize()
PY
ncu --clock-control none --kernel-name regex:'bwd' --launch-skip 2 --launch-count 3 "${SECTIONS[@]}" \
  python3 "$W/fa2.py" >"$OUT/ncu-fa2.txt" 2>&1
grep -E "^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Dynamic Shared|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A|stalled|hmma|inst_executed|wavefronts" "$OUT/ncu-ours.txt" "$OUT/ncu-fa2.txt" | cut -c1-170
