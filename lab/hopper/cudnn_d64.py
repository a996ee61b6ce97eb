# torch SDPA (cuDNN back end) on (16,16,2048,2048,64) bf16, unmasked then causal, 3 calls each:
# for ncu, to read the kernels' names (tile shapes), grids and durations (session 15).
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(16, 16, 2048, 64, dtype=torch.bfloat16, device="cuda") for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for causal in (False, True):
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        print("done causal", causal, flush=True)
