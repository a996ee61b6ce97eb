#!/usr/bin/env python3
"""Times PyTorch SDPA, pinned to its FlashAttention-2 and cuDNN backends, on the bf16 rows
of the prefill and decode bench tables (README): the peers our kernels are
measured against, in the same run on the GPU machine.

Method: `triton.testing.do_bench(..., return_mode="median")`: CUDA events around each rep,
warm-up first, median over the reps. do_bench zeroes a 256 MB buffer before every rep, so
each rep starts with a cold L2 (50 MB on the H100); inputs therefore need no rotation, and
small rows are measured from HBM, not from L2.
FLOPs = 4·B·H·Sq·Sk·D, halved for causal. For decode rows, GB/s = bytes of K+V as stored
(B·Sk·Hkv·D·2 tensors·2 bytes) over the median time; where a backend refused GQA and got
expanded K/V, the row says so, and `kv_gbps_expanded` gives the bytes it really read.

Causal prefill rows are square (sq = sk), where torch's top-left `is_causal` equals our
bottom-right mask. Decode rows run without a mask (for sq = 1 any causal mask is a no-op;
for sq = 4 the bottom-right mask hides 6 of 8192 keys per row; torch's `is_causal` is
top-left and would hide nearly all), and for sq > 1 also with
`torch.nn.attention.bias.causal_lower_right`, where a backend accepts it.

The flush (`--flush`, default from FUSED_ATTN_BENCH_FLUSH, else `torch`): `torch` is do_bench as
it is (torch's `zero_` of 256 MiB of int32: a vectorized kernel, 16-byte stores); `candle` swaps
do_bench's clear_cache for candle's `zero_set` kernel's pattern (4-byte stores, 1024-thread
blocks, as a Triton kernel), which our bench used until session 44 (benches/common/do_bench.rs
takes the same variable), so that each side can be timed after either flush in one call.

When prefill rows run (no --only decode, no --rows), it first times bf16 torch.matmul on a few
large problems with the same method (`MATMUL_SHAPES`): the measured matmul peak that issue 14
reads each prefill row against (meta["matmul"], and a line above the table).

Writes bench_torch.json (every measurement and refusal), bench_torch.md (a table) into --out.

    python3 scripts/bench_torch.py --out /tmp/bench [--rep-ms 200] [--only decode]
"""

import argparse
import datetime
import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import triton.testing
from torch.nn.attention import SDPBackend, sdpa_kernel

# (B, H, Hkv, Sq, Sk, D, causal): the prefill rows, then the decode rows.
PREFILL = [
    (1, 8, 8, 512, 512, 64, False),
    (1, 8, 8, 512, 512, 64, True),
    (16, 16, 16, 2048, 2048, 64, False),
    (16, 16, 16, 2048, 2048, 64, True),
    (16, 16, 16, 2048, 2048, 128, False),
    (16, 16, 16, 2048, 2048, 128, True),
    (4, 32, 32, 4096, 4096, 128, False),
    (4, 32, 32, 4096, 4096, 128, True),
    (1, 32, 32, 16384, 16384, 128, False),
    (1, 32, 32, 16384, 16384, 128, True),
    (16, 16, 16, 2048, 2048, 256, False),
    (16, 16, 16, 2048, 2048, 256, True),
    (4, 32, 4, 4096, 4096, 128, False),
    (4, 32, 4, 4096, 4096, 128, True),
]
DECODE = [
    (8, 32, 8, 1, 8192, 128, False),
    (1, 32, 8, 1, 32768, 128, False),
    (1, 32, 8, 1, 2048, 128, False),
    (32, 32, 8, 1, 4096, 128, False),
    (1, 32, 8, 4, 8192, 128, False),
]
# Head dims between the table's (`--only headdim`, not in the default run): d96 (Phi-3) and
# d80 (Phi-2) run on the Hopper d96 instance (benches/attention.rs `HEAD_DIM_SHAPES`).
HEAD_DIM = [
    (16, 16, 16, 2048, 2048, 96, False),
    (16, 16, 16, 2048, 2048, 96, True),
    (4, 32, 32, 4096, 4096, 96, False),
    (16, 16, 16, 2048, 2048, 80, False),
]
# The FlashAttention-3 paper's non-causal 16k shapes (`--only fa3`, not in the default run):
# hidden size 2048 (32 heads at d64, 16 at d128, 8 at d256), batch 1 (benches/attention.rs
# `FA3_SHAPES`).
FA3 = [
    (1, 32, 32, 16384, 16384, 64, False),
    (1, 16, 16, 16384, 16384, 128, False),
    (1, 8, 8, 16384, 16384, 256, False),
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


@triton.jit
def _candle_fill(ptr, n, BLOCK: tl.constexpr):
    # candle's const_set_f32 over a contiguous buffer: thread i of block b stores element
    # b * 1024 + i (one 4-byte store per thread).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offs, 0.0, mask=offs < n)


FLUSHES = {"candle": 0}


def use_flush(name):
    """Makes do_bench flush the L2 the `name` way (module docs); checks that it took."""
    if name == "torch":
        return
    drv = triton.runtime.driver.active

    def clear_cache(cache):
        flat = cache.view(torch.float32).view(-1)
        n = flat.numel()
        _candle_fill[(triton.cdiv(n, 1024),)](flat, n, BLOCK=1024, num_warps=32)
        FLUSHES["candle"] += 1

    drv.clear_cache = clear_cache
    before = FLUSHES["candle"]
    x = torch.zeros(16, device="cuda")
    triton.testing.do_bench(lambda: x.add_(1), warmup=1, rep=1)
    if FLUSHES["candle"] == before:
        raise SystemExit("--flush candle: this triton's do_bench does not call driver.active.clear_cache")


def attention_flops(b, h, sq, sk, d, causal):
    f = 4.0 * b * h * sq * sk * d
    return f / 2 if causal else f


def try_sdpa(backend, q, k, v, **kw):
    """Runs SDPA once under one backend; returns (output, None) or (None, reason)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(q, k, v, **kw)
            torch.cuda.synchronize()
            return out, None
        except Exception as e:  # a refusal probe: any error is recorded as the reason
            why = " | ".join(str(w.message).strip().splitlines()[0] for w in caught) or f"{type(e).__name__}: {e}"
            return None, why[:400]


def bench_one(backend, q, k, v, rep_ms, **kw):
    # The backend is pinned once, outside the timed function, so that no Python context
    # switching sits between the events.
    with sdpa_kernel([backend]):
        return triton.testing.do_bench(
            lambda: F.scaled_dot_product_attention(q, k, v, **kw), warmup=50, rep=rep_ms, return_mode="median"
        )


# The bf16 matmul peak the prefill rows are read against (issue 14: "each kernel's achieved
# fraction of the measured bf16 matmul peak"): cuBLAS through torch.matmul on square and
# wide problems large enough to saturate the GPU, do_bench medians with the same flush; the
# peak is the best of them.
MATMUL_SHAPES = [(8192, 8192, 8192), (16384, 8192, 8192), (8192, 16384, 16384)]


def matmul_peak(rep_ms, gen):
    rows = []
    for m, n, k in MATMUL_SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
        us = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=50, rep=rep_ms, return_mode="median") * 1e3
        rows.append({"shape": [m, n, k], "median_us": us, "tflops": 2.0 * m * n * k / us / 1e6})
        del a, b
    return {"rows": rows, "peak_tflops": max(r["tflops"] for r in rows)}


def run_row(row, kind, rep_ms, gen):
    b, h, hkv, sq, sk, d, causal = row
    dt = torch.bfloat16
    q = torch.randn(b, h, sq, d, device="cuda", dtype=dt, generator=gen)
    k = torch.randn(b, hkv, sk, d, device="cuda", dtype=dt, generator=gen)
    v = torch.randn(b, hkv, sk, d, device="cuda", dtype=dt, generator=gen)
    variants = [("causal" if causal else "none", {"is_causal": causal})]
    if kind == "decode" and sq > 1:
        from torch.nn.attention.bias import causal_lower_right

        variants.append(("causal_lower_right", {"attn_mask": causal_lower_right(sq, sk)}))
    kv_bytes = 2 * b * sk * hkv * d * q.element_size()
    results, outputs = [], {}
    for mask_name, kw in variants:
        for name, backend in BACKENDS.items():
            rec = {
                "kind": kind, "shape": [b, h, hkv, sq, sk, d], "causal": causal, "mask": mask_name,
                "backend": name, "kv": "n/a" if h == hkv else "native-gqa",
            }
            kk, vv, extra = k, v, dict(kw)
            if h != hkv:
                extra["enable_gqa"] = True
            out, why = try_sdpa(backend, q, kk, vv, **extra)
            if out is None and h != hkv:
                # The backend refused GQA: give it K/V expanded to h heads (not timed).
                g = h // hkv
                kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
                extra.pop("enable_gqa")
                rec["kv"] = "expanded"
                rec["gqa_refused"] = why
                out, why = try_sdpa(backend, q, kk, vv, **extra)
            if out is None:
                rec["status"] = "refused"
                rec["reason"] = why
                results.append(rec)
                continue
            outputs[(mask_name, name)] = out
            ms = bench_one(backend, q, kk, vv, rep_ms, **extra)
            rec.update(status="ok", median_us=ms * 1e3)
            flops = attention_flops(b, h, sq, sk, d, causal)
            rec["tflops"] = flops / (ms * 1e-3) / 1e12
            if kind == "decode":
                rec["kv_gbps"] = kv_bytes / (ms * 1e-3) / 1e9
                if rec["kv"] == "expanded":
                    rec["kv_gbps_expanded"] = kv_bytes * (h // hkv) / (ms * 1e-3) / 1e9
            results.append(rec)
        # The two backends must agree, or one of them computed something else.
        if (mask_name, "flash") in outputs and (mask_name, "cudnn") in outputs:
            diff = (outputs[(mask_name, "flash")].float() - outputs[(mask_name, "cudnn")].float()).abs().max().item()
            for rec in results:
                if rec["mask"] == mask_name:
                    rec["max_abs_diff_flash_vs_cudnn"] = diff
    del q, k, v, outputs
    torch.cuda.empty_cache()
    return results


def fmt_shape(s):
    return "(" + ",".join(str(x) for x in s) + ")"


def markdown(meta, results):
    lines = [
        f"PyTorch SDPA, bf16, on {meta['device']} ({meta['date']}); torch {meta['torch']}, "
        f"cuDNN {meta['cudnn']}, triton {meta['triton']}. Median of triton.testing.do_bench "
        f"(L2 flushed before each rep, {meta.get('flush', 'torch')} flush), rep {meta['rep_ms']} ms.",
        "",
        "| kind | (B,H,Hkv,Sq,Sk,D) | mask | flash µs | flash TF/s | flash GB/s | cuDNN µs | cuDNN TF/s | cuDNN GB/s | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    if meta.get("matmul"):
        mm = meta["matmul"]
        cells = ", ".join(f"{'×'.join(map(str, r['shape']))} {r['tflops']:.0f}" for r in mm["rows"])
        lines[1:1] = ["", f"bf16 matmul peak (torch.matmul, same flush, TF/s, M×N×K): {cells}; peak {mm['peak_tflops']:.0f} TF/s."]
    keys = []
    for r in results:
        key = (r["kind"], tuple(r["shape"]), r["mask"])
        if key not in keys:
            keys.append(key)
    for key in keys:
        cells, notes = [], []
        for be in BACKENDS:
            r = next((x for x in results if (x["kind"], tuple(x["shape"]), x["mask"]) == key and x["backend"] == be), None)
            if r is None or r["status"] != "ok":
                cells += ["refused", "–", "–"]
                if r is not None:
                    notes.append(f"{be} refused: {r['reason'][:120]}")
                continue
            cells += [f"{r['median_us']:.1f}", f"{r['tflops']:.0f}", f"{r['kv_gbps']:.0f}" if "kv_gbps" in r else "–"]
            if r["kv"] == "expanded":
                notes.append(f"{be}: expanded K/V (GQA refused)")
            if "max_abs_diff_flash_vs_cudnn" in r and be == "cudnn":
                notes.append(f"flash vs cuDNN max abs diff {r['max_abs_diff_flash_vs_cudnn']:.2g}")
        lines.append(f"| {key[0]} | {fmt_shape(key[1])} | {key[2]} | " + " | ".join(cells) + " | " + "; ".join(notes) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep-ms", type=int, default=200, help="do_bench repetition time per measurement")
    ap.add_argument("--only", choices=["prefill", "decode", "headdim", "fa3"], default=None,
                    help="one kind of row; headdim / fa3: the HEAD_DIM / FA3 rows, run only when asked")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--flush", choices=["torch", "candle"], default=os.environ.get("FUSED_ATTN_BENCH_FLUSH", "torch"),
                    help="the L2 flush before each rep (module docs)")
    ap.add_argument("--rows", default=None, help="comma-separated indices into the prefill rows then the decode rows")
    ap.add_argument("--no-matmul", action="store_true", help="skip the bf16 matmul peak (measured when prefill rows run)")
    args = ap.parse_args()
    use_flush(args.flush)
    os.makedirs(args.out, exist_ok=True)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    meta = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "triton": triton.__version__,
        "rep_ms": args.rep_ms,
        "seed": seed,
        "method": "triton.testing.do_bench median, L2 flushed per rep; FLOPs 4BHSqSkD (halved causal)",
        "flush": args.flush,
    }
    if args.only not in ("decode", "headdim", "fa3") and not args.no_matmul and args.rows is None:
        meta["matmul"] = matmul_peak(args.rep_ms, gen)
    print(f"bench_torch: {meta}", flush=True)
    results = []
    rows = [("prefill", r) for r in PREFILL] + [("decode", r) for r in DECODE]
    if args.only == "headdim":
        rows = [("prefill", r) for r in HEAD_DIM]
    if args.only == "fa3":
        rows = [("prefill", r) for r in FA3]
    keep = None if args.rows is None else {int(i) for i in args.rows.split(",")}
    for idx, (kind, row) in enumerate(rows):
        if args.only and args.only not in (kind, "headdim", "fa3"):
            continue
        if keep is not None and idx not in keep:
            continue
        for rec in run_row(row, kind, args.rep_ms, gen):
            results.append(rec)
            if rec["status"] == "ok":
                bw = f" {rec['kv_gbps']:7.0f} GB/s" if "kv_gbps" in rec else ""
                print(f"  {kind:7s} {fmt_shape(rec['shape']):28s} {rec['mask']:18s} {rec['backend']:5s} "
                      f"{rec['median_us']:10.1f} us {rec['tflops']:6.0f} TF/s{bw} kv={rec['kv']}", flush=True)
            else:
                print(f"  {kind:7s} {fmt_shape(rec['shape']):28s} {rec['mask']:18s} {rec['backend']:5s} "
                      f"REFUSED: {rec['reason']}", flush=True)
    with open(os.path.join(args.out, "bench_torch.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    table = markdown(meta, results)
    with open(os.path.join(args.out, "bench_torch.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
