# PyTorch SDPA (cuDNN, FA2) on the decode rows in both K/V layouts, same method as
# scripts/bench_torch.py (triton do_bench, L2 flushed, median): "bhsd" = tensors made
# (B, H, S, D) (torch's usual layout, our cuda_decode_layout_bf16/bhsd rows), "bshd" = made
# (B, S, H, D) and passed as transpose(1, 2) views (our default layout, cuda_fused_attn_bf16's
# decode rows). --ncu: 4 calls per backend and layout of the row --row picks, no timing.
import argparse, torch, triton
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

ROWS = [(8, 1, 8192), (1, 1, 32768), (1, 1, 2048), (32, 1, 4096), (1, 4, 8192)]
ap = argparse.ArgumentParser()
ap.add_argument("--ncu", type=int, default=-1, help="index into ROWS: launch 4 calls each, untimed")
a = ap.parse_args()
H, HKV, D = 32, 8, 128
g = torch.Generator(device="cuda").manual_seed(0)
rows = [ROWS[a.ncu]] if a.ncu >= 0 else ROWS
for b, sq, sk in rows:
    for layout in ("bhsd", "bshd"):
        def mk(heads, s):
            if layout == "bhsd":
                return torch.randn(b, heads, s, D, device="cuda", dtype=torch.bfloat16, generator=g)
            return torch.randn(b, s, heads, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
        q, k, v = mk(H, sq), mk(HKV, sk), mk(HKV, sk)
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            f = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            try:
                with sdpa_kernel([be]):
                    if a.ncu >= 0:
                        for _ in range(4):
                            f()
                        torch.cuda.synchronize()
                        print(f"ncu done {layout} {name}", flush=True)
                        continue
                    ms = triton.testing.do_bench(f, warmup=50, rep=100, return_mode="median")
                gbs = 2 * b * sk * HKV * D * 2 / (ms * 1e-3) / 1e9
                print(f"({b},32,8,{sq},{sk},128) {layout} {name} {ms * 1e3:.1f} us {gbs:.0f} GB/s", flush=True)
            except Exception as e:  # a backend that refuses a layout says so
                print(f"({b},32,8,{sq},{sk},128) {layout} {name} refused: {str(e).splitlines()[0][:200]}", flush=True)
