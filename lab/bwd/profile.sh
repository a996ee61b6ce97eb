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
ncu --clock-control none --kernel-name regex:'fattn_bwd' --launch-skip 3 --launch-count 3 "${SECTIONS[@]}" \
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
grep -E "^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Dynamic Shared|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A" "$OUT/ncu-ours.txt" "$OUT/ncu-fa2.txt" | cut -c1-170
