# Session 30 call 3. (a) d64 2048 rows on the 128-row tile: pack s30c is HEAD with the `_mods`
# instances' dense entry compiled plain (as s30b) and FUSED_ATTN_LAB_SMALL_TILE making every
# plain d64 problem take that tile (one tile per CTA, 2 consumer warpgroups at 240 registers)
# instead of the plain 192-row persistent one (3 consumers at 160/128). cuDNN runs this row on
# 128-row tiles with 2 consumers (session 29 call 3). Session 11 lost 2% this way with the
# `_mods` arithmetic compiled in; call 2 showed that code cost the small rows 30% under ncu.
# Prediction: causal -3% (less diagonal waste, more registers), unmasked +2%.
# (b) SM clocks and power while the d128 2048 row runs, ours then cuDNN (plan item 4).
. lab/decode/check_ab.sh
body() {
  gpu_info
  envab s30c 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d64' 3 FUSED_ATTN_LAB_SMALL_TILE "t192=unset t128=1"
  cd /tmp/s30c
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 50 > "$R/smi_ours.csv" &
  S=$!
  timeout 60 bin/bench 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128$' --bench --warm-up-time 1 --measurement-time 4 --sample-size 10 --noplot > "$R/d128_ours.log" 2>&1
  kill $S
  cat > /tmp/cudnn_d128.py <<'PY'
import torch, torch.nn.functional as F, triton
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(16, 16, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    f = lambda: F.scaled_dot_product_attention(q, k, v)
    for _ in range(3):
        print("cudnn d128 2048 median us", 1e3 * triton.testing.do_bench(f, rep=1500, return_mode="median"), flush=True)
PY
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 50 > "$R/smi_cudnn.csv" &
  S=$!
  timeout 90 python3 /tmp/cudnn_d128.py > "$R/d128_cudnn.log" 2>&1
  kill $S
  grep -E 'time:|median' "$R/d128_ours.log" "$R/d128_cudnn.log"
  cd "$L"
}
archived body
