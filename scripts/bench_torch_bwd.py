#!/usr/bin/env python3
"""Times PyTorch SDPA's backward, pinned to its FlashAttention-2 and cuDNN backends, on the
bf16 rows of the training bench: the peers our backward is measured against, in the same
run on the GPU machine.

Method: as scripts/bench_torch.py (triton.testing.do_bench, median, 256 MB L2 flush before
every rep). The timed function is the backward alone, `out.backward(dout, retain_graph=True)`
on one forward's graph (gradients reset to None by do_bench's `grad_to_none`), as
FlashAttention's own benchmark does; the forward is timed too. TF/s on the FlashAttention
convention: forward FLOPs = 4·B·H·S²·D, backward = 2.5 × forward, both halved for causal.

    python3 scripts/bench_torch_bwd.py --out /tmp/bench [--rep-ms 200]

Writes bench_torch_bwd.json and bench_torch_bwd.md into --out.
"""

import argparse
import datetime
import json
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.testing
from torch.nn.attention import SDPBackend, sdpa_kernel

# (B, H, S, D): the training table's rows; each runs causal and not.
ROWS = [
    (16, 16, 2048, 64),
    (16, 16, 2048, 128),
    (4, 32, 4096, 128),
    (1, 32, 16384, 128),
    (4, 9, 2048, 64),
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def fwd_flops(b, h, s, d, causal):
    f = 4.0 * b * h * s * s * d
    return f / 2 if causal else f


def run_row(row, causal, rep_ms, gen):
    b, h, s, d = row
    dt = torch.bfloat16
    mk = lambda: torch.randn(b, h, s, d, device="cuda", dtype=dt, generator=gen).requires_grad_(True)
    q, k, v = mk(), mk(), mk()
    dout = torch.randn(b, h, s, d, device="cuda", dtype=dt, generator=gen)
    out_rows = []
    grads = {}
    for name, backend in BACKENDS.items():
        rec = {"shape": [b, h, s, d], "causal": causal, "backend": name}
        try:
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                fwd_ms = triton.testing.do_bench(
                    lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                    warmup=50, rep=rep_ms, return_mode="median")
                bwd_ms = triton.testing.do_bench(
                    lambda: out.backward(dout, retain_graph=True),
                    warmup=50, rep=rep_ms, grad_to_none=[q, k, v], return_mode="median")
                q.grad = k.grad = v.grad = None
                out.backward(dout, retain_graph=True)
                grads[name] = [t.grad.float().clone() for t in (q, k, v)]
                q.grad = k.grad = v.grad = None
                del out
        except Exception as e:  # a refusal: recorded with its reason
            rec.update(status="refused", reason=f"{type(e).__name__}: {e}"[:400])
            out_rows.append(rec)
            continue
        fl = fwd_flops(b, h, s, d, causal)
        rec.update(status="ok", fwd_us=fwd_ms * 1e3, bwd_us=bwd_ms * 1e3,
                   fwd_tflops=fl / (fwd_ms * 1e-3) / 1e12, bwd_tflops=2.5 * fl / (bwd_ms * 1e-3) / 1e12,
                   fwd_bwd_tflops=3.5 * fl / ((fwd_ms + bwd_ms) * 1e-3) / 1e12)
        out_rows.append(rec)
    if "flash" in grads and "cudnn" in grads:
        diff = max((a - c).abs().max().item() for a, c in zip(grads["flash"], grads["cudnn"]))
        for r in out_rows:
            r["max_abs_grad_diff_flash_vs_cudnn"] = diff
    del q, k, v, dout, grads
    torch.cuda.empty_cache()
    return out_rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep-ms", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    meta = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
        "rep_ms": args.rep_ms, "seed": seed,
        "method": "do_bench median, L2 flushed per rep; backward alone on a retained graph; "
                  "bwd FLOPs 2.5x fwd (4BHS^2D), causal halved",
    }
    print(f"bench_torch_bwd: {meta}", flush=True)
    results = []
    for row in ROWS:
        for causal in (False, True):
            for rec in run_row(row, causal, args.rep_ms, gen):
                results.append(rec)
                if rec["status"] == "ok":
                    print(f"  {str(tuple(rec['shape'])):22s} causal={causal!s:5s} {rec['backend']:5s} "
                          f"fwd {rec['fwd_us']:9.1f} us {rec['fwd_tflops']:5.0f} TF/s | "
                          f"bwd {rec['bwd_us']:9.1f} us {rec['bwd_tflops']:5.0f} TF/s", flush=True)
                else:
                    print(f"  {tuple(rec['shape'])} causal={causal} {rec['backend']} REFUSED: {rec['reason']}")
    with open(os.path.join(args.out, "bench_torch_bwd.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"PyTorch SDPA backward, bf16, {meta['device']} ({meta['date']}), torch {meta['torch']}, "
             f"cuDNN {meta['cudnn']}; {meta['method']}.", "",
             "| (B,H,S,D) | causal | flash bwd µs | flash bwd TF/s | cuDNN bwd µs | cuDNN bwd TF/s |",
             "|---|---|---|---|---|---|"]
    for row in ROWS:
        for causal in (False, True):
            cells = []
            for be in BACKENDS:
                r = next((x for x in results if x["shape"] == list(row) and x["causal"] == causal
                          and x["backend"] == be), None)
                cells += ([f"{r['bwd_us']:.0f}", f"{r['bwd_tflops']:.0f}"] if r and r["status"] == "ok"
                          else ["refused", "–"])
            lines.append(f"| {tuple(row)} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "bench_torch_bwd.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
