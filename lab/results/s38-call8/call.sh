# Session 38 call 8: the 32x4096 decode's load mix against cuDNN's (plan item 1 since session
# 37): ncu's memory workload tables (requests, sectors per request, hit rates per access kind:
# LDGSTS, LDG, TMA), warp state and instruction stats, speed of light; ours (pack s38d, two
# launches past the warm-up) and cuDNN's split kernel through PyTorch SDPA (same shape, bf16).
. lab/decode/check_ab.sh
SECT="--section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section MemoryWorkloadAnalysis_Chart --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy"
body() {
  gpu_info
  unpack s38d
  cd /tmp/s38d
  timeout 100 ncu $SECT --csv --page details -k regex:fattn_decode --launch-skip 20 --launch-count 2 \
    bin/bench 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$' --bench --noplot --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 \
    > "$R/ours.csv" 2> "$R/ours.err"; echo "ours rc=$?"
  cat > /tmp/cudnn_decode.py <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q = torch.randn(32, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(32, 8, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(8): F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
PY
  timeout 100 ncu $SECT --csv --page details -k regex:'cudnn|sdpa|fprop|flash|xmma|attn' --launch-skip 4 --launch-count 2 \
    python3 /tmp/cudnn_decode.py > "$R/cudnn.csv" 2> "$R/cudnn.err"; echo "cudnn rc=$?"
  grep -c . "$R/ours.csv" "$R/cudnn.csv"; tail -2 "$R/cudnn.err"
  cd "$L"
}
archived body
