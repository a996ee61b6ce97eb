"""cuDNN's decode kernel through PyTorch SDPA on the (32,32,8,1,4096,128) bf16 row, eight calls:
for ncu to profile beside ours (session 38 call 8 ran the same lines inline)."""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

q = torch.randn(32, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(32, 8, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(8):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
