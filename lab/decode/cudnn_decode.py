"""cuDNN's decode kernel through PyTorch SDPA on a (B,32,8,1,SK,128) bf16 row, eight calls: for
ncu to profile beside ours (session 38 call 8 ran the same lines inline).

    python3 lab/decode/cudnn_decode.py [B SK]   # default 32 4096 (session 40); 1 2048 (session 43)
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

b, sk = (int(x) for x in sys.argv[1:3]) if len(sys.argv) >= 3 else (32, 4096)
q = torch.randn(b, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(b, 8, sk, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(8):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
