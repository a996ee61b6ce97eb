"""PyTorch SDPA anchors for the lab's bench shapes, timed the same way as the lab (CUDA
events around each launch, 3 warm-ups, median of N reps), pinned to the flash (FA2) and
cuDNN backends. Run on the GPU machine next to `lab bench`."""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

SHAPES = [(1, 8, 512, 64, False), (1, 8, 512, 64, True), (16, 16, 2048, 64, False), (16, 16, 2048, 64, True),
          (16, 16, 2048, 128, False), (16, 16, 2048, 128, True), (4, 32, 4096, 128, False),
          (4, 32, 4096, 128, True), (1, 32, 16384, 128, False), (1, 32, 16384, 128, True)]


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


if len(sys.argv) > 1 and sys.argv[1] == "prof":
    # One (16,16,2048,128) flash launch after two warm-ups, for ncu (lab/run.sh tprof).
    q, k, v = (torch.randn(16, 16, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    sys.exit(0)

print(f"{'shape(b,h,s,d)':26s} {'causal':6s} {'kernel':22s} {'ms':>10s} {'TF/s':>8s}")
for b, h, s, d, causal in SHAPES:
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
    reps = 20 if flops > 1e12 else 50
    for name, backend in (("torch-flash", SDPBackend.FLASH_ATTENTION), ("torch-cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps)
        print(f"{f'{b},{h},{s},{d}':26s} {int(causal):<6d} {name:22s} {ms:10.4f} {flops / ms / 1e9:8.1f}", flush=True)
