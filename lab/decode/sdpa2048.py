# torch SDPA on (1,32,8,1,2048,128) bf16, cuDNN then FA2, 4 calls each (for ncu).
import torch
from torch.nn.attention import sdpa_kernel, SDPBackend
import torch.nn.functional as F
q = torch.randn(1, 32, 1, 128, dtype=torch.bfloat16, device="cuda")
k = torch.randn(1, 8, 2048, 128, dtype=torch.bfloat16, device="cuda")
v = torch.randn(1, 8, 2048, 128, dtype=torch.bfloat16, device="cuda")
for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
    with sdpa_kernel(be):
        for _ in range(4):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    print("backend done", be, flush=True)
