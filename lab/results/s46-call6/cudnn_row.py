#!/usr/bin/env python3
"""One bench row on torch's cuDNN SDPA for ~SECONDS of do_bench (clock and power sampling).
    python3 cudnn_row.py B H HKV SQ SK D CAUSAL SECONDS"""
import sys

import torch
import torch.nn.functional as F
import triton.testing
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, hkv, sq, sk, d, causal = (int(x) for x in sys.argv[1:8])
secs = float(sys.argv[8])
q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
k = torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16)
v = torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16)
kw = {"enable_gqa": True} if h != hkv else {}
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), **kw)
    ms = triton.testing.do_bench(f, warmup=300, rep=int(secs * 1000), return_mode="median")
print(f"cudnn ({b},{h},{hkv},{sq},{sk},{d}) causal={causal} median {ms * 1e3:.1f} us", flush=True)
