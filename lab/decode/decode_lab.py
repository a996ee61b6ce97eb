#!/usr/bin/env python3
"""Checks and times kernels/decode_sm80.cu (through lab/decode/decode_lab.cu) against
PyTorch on the GPU machine, in one process.

Correctness: fresh random inputs per case; the output is poisoned with NaN first; the
reference is the crate's semantics in float64 on the upcast inputs; the bar is
max|ours - ref| <= 2 * max|naive - ref| + 1e-5, where naive is the same math in the input
dtype (products in the dtype, softmax in f32), as src/reference.rs does it.

Timing: triton.testing.do_bench median (CUDA events, L2 flushed before each rep), the same
call that scripts/bench_torch.py uses for the PyTorch SDPA flash and cuDNN backends.

    python3 lab/decode/decode_lab.py --lib .decode-lab/libdecode_lab.so [--quick] [--no-bench]
"""

import argparse
import ctypes
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

DTYPE_CODE = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2}


class Lab:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        f = self.lib.lab_decode
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [ctypes.c_float] * 2 + \
            [ctypes.c_int] * 2 + [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
        self.workspace = torch.empty(160 << 20, dtype=torch.float32, device="cuda")
        self.prefill = getattr(self.lib, "lab_prefill_bf16_d128", None)
        if self.prefill is not None:
            self.prefill.restype = ctypes.c_int
            self.prefill.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 5 + [ctypes.c_float] + \
                [ctypes.c_int] * 2 + [ctypes.c_void_p]

    def run_prefill(self, q, k, v, out, scale, wl=-1, wr=-1):
        """The prefill kernel (kernels/fwd_sm80.cu), bf16, head dim 128."""
        b, sq, h, d = q.shape
        sk, hkv = k.shape[1], k.shape[2]
        strides = (ctypes.c_longlong * 12)(*(list(q.stride()[:3]) + list(k.stride()[:3]) + list(v.stride()[:3]) +
                                             list(out.stride()[:3])))
        rc = self.prefill(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), strides, b, sq, sk, h, hkv,
                          scale, wl, wr, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"lab_prefill returned {rc}")

    def run(self, q, k, v, out, scale, softcap=0.0, wl=-1, wr=-1, alibi=None, splits=0):
        b, sq, h, d = q.shape
        sk, hkv = k.shape[1], k.shape[2]
        strides = (ctypes.c_longlong * 12)(*(list(q.stride()[:3]) + list(k.stride()[:3]) + list(v.stride()[:3]) +
                                             list(out.stride()[:3])))
        rc = self.lib.lab_decode(
            DTYPE_CODE[q.dtype], q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), strides,
            b, sq, sk, h, hkv, d, scale, softcap, wl, wr,
            alibi.data_ptr() if alibi is not None else None, splits,
            self.workspace.data_ptr(), self.workspace.numel(), torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"lab_decode returned {rc}")
        return self.lib.lab_last_splits()


def visible(sq, sk, wl, wr, device):
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(sk, device=device).unsqueeze(0)
    diag = i + sk - sq
    keep = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if wl >= 0:
        keep &= j >= diag - wl
    if wr >= 0:
        keep &= j <= diag + wr
    return keep, (diag - j).abs()


def attention(q, k, v, scale, softcap, wl, wr, alibi, math_dtype):
    """(b, sq, h, d) layout. Products in q's dtype unless math_dtype is float64."""
    b, sq, h, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    g = h // hkv
    soft = torch.float64 if math_dtype == torch.float64 else torch.float32
    qq = q.to(math_dtype).transpose(1, 2)
    kk = k.to(math_dtype).transpose(1, 2).repeat_interleave(g, dim=1)
    vv = v.to(math_dtype).transpose(1, 2).repeat_interleave(g, dim=1)
    s = (qq @ kk.transpose(-1, -2)).to(soft) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    keep, dist = visible(sq, sk, wl, wr, q.device)
    if alibi is not None:
        s = s - alibi.to(soft).reshape(b, h, 1, 1) * dist.to(soft)
    s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, dim=-1)
    p = torch.where(keep, p, torch.zeros_like(p))  # rows with no visible key: zeros
    o = p.to(math_dtype) @ vv
    return o.transpose(1, 2).to(q.dtype if math_dtype != torch.float64 else torch.float64)


def make_kv(b, sk, hkv, d, dtype, layout):
    if layout == "transposed":  # (b, hkv, sk, d) storage viewed as (b, sk, hkv, d)
        return torch.randn(b, hkv, sk, d, device="cuda", dtype=dtype).transpose(1, 2)
    if layout == "unaligned":  # head dim starts one element in: scalar-load path
        return torch.randn(b, sk, hkv, d + 1, device="cuda", dtype=dtype)[..., 1:]
    return torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)


def check_case(lab, case, log):
    (b, h, hkv, sq, sk, d, dtype, wl, wr, softcap, alibi_kind, layout, splits) = case
    q = torch.randn(b, sq, h, d, device="cuda", dtype=dtype)
    if layout == "unaligned":
        q = torch.randn(b, sq, h, d + 1, device="cuda", dtype=dtype)[..., 1:]
    k = make_kv(b, sk, hkv, d, dtype, layout)
    v = make_kv(b, sk, hkv, d, dtype, layout)
    alibi = None
    if alibi_kind:
        alibi = (torch.rand(b, h, device="cuda") * 0.5).contiguous()
    scale = 1.0 / math.sqrt(d)
    out = torch.full((b, sq, h, d), float("nan"), device="cuda", dtype=dtype)
    used = lab.run(q, k, v, out, scale, softcap, wl, wr, alibi, splits)
    torch.cuda.synchronize()
    ref = attention(q, k, v, scale, softcap, wl, wr, alibi, torch.float64)
    naive = attention(q, k, v, scale, softcap, wl, wr, alibi, dtype)
    err = (out.double() - ref).abs().max().item()
    err_naive = (naive.double() - ref).abs().max().item()
    # Run again into fresh poison: the same bits, so the tile counters were left at zero and
    # nothing depends on which split block finishes last.
    first = out.clone()
    out.fill_(float("nan"))
    lab.run(q, k, v, out, scale, softcap, wl, wr, alibi, splits)
    torch.cuda.synchronize()
    same = torch.equal(out.view(torch.uint8), first.view(torch.uint8))
    ok = math.isfinite(err) and err <= 2 * err_naive + 1e-5 and same
    log(f"{'ok  ' if ok else 'FAIL'}{'' if same else ' (second run differs)'} b{b} h{h} hkv{hkv} sq{sq} sk{sk} d{d} {str(dtype)[6:]} w({wl},{wr}) "
        f"cap{softcap} alibi{int(alibi_kind)} {layout} splits={used}: err {err:.3g} naive {err_naive:.3g}")
    return ok


def cases(quick, small=False):
    bf, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    if small:  # for compute-sanitizer: every code path, small sizes
        return [
            (1, 8, 2, 1, 700, 128, bf, -1, -1, 0.0, False, "contig", 0),
            (1, 2, 2, 1, 2000, 64, bf, -1, -1, 0.0, False, "contig", 0),     # combine: 8 lanes per item
            (1, 1, 1, 100, 80, 64, f16, -1, 0, 0.0, False, "contig", 0),     # split, 20 rows see nothing
            (1, 8, 2, 3, 300, 128, bf, -1, 0, 0.0, False, "contig", 1),
            (1, 4, 2, 6, 150, 40, f16, -1, 0, 0.0, False, "unaligned", 0),
            (1, 4, 4, 16, 10, 64, bf, -1, 0, 0.0, True, "contig", 0),
            (1, 8, 2, 3, 300, 72, f32, 20, 0, 10.0, True, "unaligned", 0),
            (1, 8, 2, 2, 500, 128, f32, -1, -1, 0.0, False, "contig", 0),
            (1, 4, 1, 5, 200, 256, f16, 50, 2, 30.0, True, "transposed", 0),  # last: 136 KB smem
        ]
    c = [
        # (b, h, hkv, sq, sk, d, dtype, wl, wr, softcap, alibi, layout, splits)
        (2, 32, 8, 1, 8192, 128, bf, -1, -1, 0.0, False, "contig", 0),
        (1, 32, 8, 4, 8192, 128, bf, -1, 0, 0.0, False, "contig", 0),
        (1, 32, 8, 4, 8192, 128, bf, -1, 0, 0.0, False, "contig", 1),
        (3, 8, 1, 7, 2049, 128, bf, -1, 0, 0.0, False, "contig", 0),          # MQA, 56 rows: 4 row groups
        (1, 16, 16, 16, 4097, 64, bf, -1, 0, 0.0, False, "contig", 0),        # GQA 1
        (2, 8, 2, 3, 1000, 64, bf, 255, 0, 0.0, False, "contig", 0),          # window
        (4, 8, 1, 1, 5, 32, f16, -1, 0, 0.0, False, "contig", 0),             # d 32 -> 64 instance
        (1, 32, 4, 4, 32768, 128, f16, -1, 0, 0.0, False, "contig", 0),
        (2, 8, 2, 5, 777, 256, bf, -1, 0, 0.0, False, "contig", 0),
        (2, 8, 2, 5, 777, 256, f16, 100, 3, 30.0, True, "contig", 3),
        (2, 12, 4, 9, 3001, 96, bf, -1, -1, 0.0, True, "transposed", 0),     # d 96 -> 128, strided
        (1, 8, 2, 6, 1500, 40, f16, -1, 0, 20.0, False, "unaligned", 0),      # scalar loads
        (1, 8, 2, 16, 10, 128, bf, -1, 0, 0.0, False, "contig", 0),           # sq > sk: empty rows
        (1, 4, 2, 8, 300, 128, bf, 0, 0, 0.0, False, "contig", 0),            # diagonal only
        (1, 4, 4, 16, 64, 64, f16, 3, 2, 0.0, False, "contig", 2),            # narrow window
        (2, 32, 32, 2, 333, 128, bf, -1, -1, 50.0, True, "contig", 0),
        (1, 64, 2, 1, 4096, 128, bf, -1, -1, 0.0, False, "contig", 0),        # group 32: 2 row groups
        (1, 32, 8, 1, 1, 128, bf, -1, 0, 0.0, False, "contig", 0),            # one key
        (1, 8, 8, 13, 200, 72, bf, 10, 5, 0.0, True, "unaligned", 0),
        (2, 32, 8, 1, 8192, 128, f32, -1, -1, 0.0, False, "contig", 0),
        (1, 16, 2, 5, 3000, 256, f32, -1, 0, 30.0, True, "transposed", 0),
        (1, 8, 2, 3, 999, 59, f32, 100, 0, 0.0, False, "unaligned", 0),
        (1, 8, 8, 16, 12, 64, f32, -1, 0, 0.0, False, "contig", 0),
        (2, 4, 4, 1, 20000, 64, f16, -1, -1, 0.0, True, "contig", 0),     # combine: 8 lanes per item
        (1, 1, 1, 100, 80, 64, f16, -1, 0, 0.0, False, "contig", 0),      # split, 20 rows see nothing
        (1, 32, 8, 1, 4096, 128, bf, -1, -1, 0.0, False, "contig", 200),  # 64 splits: 8 batches per lane
    ]
    if not quick:
        gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
        for _ in range(24):
            r = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=gen))
            hkv = [1, 2, 4, 8][r(0, 3)]
            g = [1, 2, 4, 8][r(0, 3)]
            d = [32, 64, 80, 128, 256][r(0, 4)]
            win = r(0, 3)
            wl, wr = [(-1, -1), (-1, 0), (r(0, 300), 0), (r(0, 50), r(0, 8))][win]
            c.append((r(1, 3), hkv * g, hkv, r(1, 16), r(1, 20000), d, [bf, f16, f32][r(0, 2)], wl, wr,
                      [0.0, 25.0][r(0, 1)], bool(r(0, 1)), ["contig", "transposed", "unaligned"][r(0, 2)], 0))
    return c


BENCH = [
    (8, 32, 8, 1, 8192, 128),
    (1, 32, 8, 1, 32768, 128),
    (1, 32, 8, 1, 2048, 128),
    (32, 32, 8, 1, 4096, 128),
    (1, 32, 8, 4, 8192, 128),
]


# Where decode stops paying: our split kernel against torch's FA2 (what the prefill kernel
# is held to) as sq grows at batch 1 and at batch 8.
CROSSOVER = [(1, 32, 8, sq, 8192, 128) for sq in (8, 16, 32, 64, 128)] + \
    [(8, 32, 8, sq, 2048, 128) for sq in (16, 32, 64)]


def bench(lab, log, rep_ms, split_sweep, shapes, peers=True):
    import triton.testing
    from bench_torch import BACKENDS, bench_one, try_sdpa
    rows = []
    for (b, h, hkv, sq, sk, d) in shapes:
        dt = torch.bfloat16
        q = torch.randn(b, sq, h, d, device="cuda", dtype=dt)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dt)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=dt)
        out = torch.empty_like(q)
        kv_bytes = 2 * b * sk * hkv * d * 2
        scale = 1.0 / math.sqrt(d)
        wr = 0 if sq > 1 else -1  # bottom-right causal for sq > 1 (a no-op for sq = 1)
        res = {}
        splits_list = [0] + (split_sweep if split_sweep else [])
        for sp in splits_list:
            used = lab.run(q, k, v, out, scale, 0.0, -1, wr, None, sp)
            ms = triton.testing.do_bench(lambda: lab.run(q, k, v, out, scale, 0.0, -1, wr, None, sp),
                                         warmup=50, rep=rep_ms, return_mode="median")
            res[f"ours(s={used}{'' if sp else ',auto'})"] = ms
        if peers and lab.prefill is not None and d == 128:
            out_p = torch.empty_like(q)
            lab.run_prefill(q, k, v, out_p, scale, -1, wr)
            lab.run(q, k, v, out, scale, 0.0, -1, wr, None, 0)
            diff = (out_p.float() - out.float()).abs().max().item()
            res["prefill"] = triton.testing.do_bench(lambda: lab.run_prefill(q, k, v, out_p, scale, -1, wr),
                                                     warmup=50, rep=rep_ms, return_mode="median")
            log(f"  max|prefill - decode| = {diff:.3g}")
        # torch peers, (b, h, s, d) layout; native GQA where the backend takes it.
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        for name, be in (BACKENDS.items() if peers else []):
            kw = {"enable_gqa": True} if h != hkv else {}
            if sq > 1:
                from torch.nn.attention.bias import causal_lower_right
                kw["attn_mask"] = causal_lower_right(sq, sk)
            kk, vv, note = kt, vt, ""
            o, why = try_sdpa(be, qt, kk, vv, **kw)
            if o is None and h != hkv:
                kw.pop("enable_gqa")
                kk, vv = kt.repeat_interleave(h // hkv, 1), vt.repeat_interleave(h // hkv, 1)
                note = "(expanded K/V)"
                o, why = try_sdpa(be, qt, kk, vv, **kw)
            if o is None and sq > 1:
                kw.pop("attn_mask")  # 6 of 8192 keys masked: same work
                note += "(no mask)"
                o, why = try_sdpa(be, qt, kk, vv, **kw)
            if o is None:
                res[name] = None
                log(f"  {name} refused: {why}")
                continue
            res[name + note] = bench_one(be, qt, kk, vv, rep_ms, **kw)
        line = f"({b},{h},{hkv},{sq},{sk},{d}) " + "  ".join(
            f"{n}: {ms * 1e3:.1f} us {kv_bytes / (ms * 1e-3) / 1e9:.0f} GB/s" for n, ms in res.items() if ms)
        log(line)
        rows.append(((b, h, hkv, sq, sk, d), res, kv_bytes))
        del q, k, v, out, qt, kt, vt
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--once", action="store_true", help="run each bench row once (for ncu), no timing")
    ap.add_argument("--variant", type=int, default=0, help="bf16 D=128 tile variant: 0 shipped, 2 or 4 stages")
    ap.add_argument("--no-peers", action="store_true", help="time only ours (no prefill, no torch)")
    ap.add_argument("--small", action="store_true", help="a few small cases (for compute-sanitizer)")
    ap.add_argument("--only", default="", help="comma-separated indices of the cases to check")
    ap.add_argument("--max-dim", type=int, default=256,
                    help="check only cases with head dim <= this (racecheck fails on the D = 256 instance)")
    ap.add_argument("--crossover", action="store_true", help="also time sq 8..128 against torch")
    ap.add_argument("--rep-ms", type=int, default=200)
    ap.add_argument("--drv-image", default="", help="launch the bf16 D=128 kernel from this PTX/cubin via the driver API")
    ap.add_argument("--drv-mode", type=int, default=0, help="0: cuModuleLoadData, 1: cuLibraryLoadData")
    ap.add_argument("--log", default=None)
    ap.add_argument("--sweep", default="", help="comma-separated split counts to time besides auto")
    args = ap.parse_args()
    logf = open(args.log, "w") if args.log else None

    def log(s):
        print(s, flush=True)
        if logf:
            logf.write(s + "\n")
            logf.flush()

    log(f"device {torch.cuda.get_device_name()} torch {torch.__version__} "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    lab = Lab(args.lib)
    lab.lib.lab_set_variant(args.variant)
    if args.drv_image:
        rc = lab.lib.lab_drv_load(args.drv_image.encode(), args.drv_mode)
        log(f"driver-API image {args.drv_image} mode {args.drv_mode}: rc {rc}")
        if rc:
            return 2
    log(f"variant {args.variant}")
    fails = 0
    only = {int(x) for x in args.only.split(",") if x}
    checked = [] if args.no_check else [c for n, c in enumerate(cases(args.quick, args.small))
                                        if c[5] <= args.max_dim and (not only or n in only)]
    for case in checked:
        fails += not check_case(lab, case, log)
    log(f"correctness: {fails} failures")
    if args.once:
        for (b, h, hkv, sq, sk, d) in BENCH:
            q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(q)
            for _ in range(2):
                used = lab.run(q, k, v, out, 1.0 / math.sqrt(d), 0.0, -1, 0 if sq > 1 else -1, None, 0)
            torch.cuda.synchronize()
            log(f"once ({b},{h},{hkv},{sq},{sk},{d}) splits={used}")
        return 0
    if not args.no_bench:
        import triton.testing
        src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=50, rep=args.rep_ms, return_mode="median")
        log(f"device-to-device copy of 1 GiB: {2 * src.numel() / (ms * 1e-3) / 1e9:.0f} GB/s (read + write)")
        del src, dst
        sweep = [int(x) for x in args.sweep.split(",") if x]
        rows = bench(lab, log, args.rep_ms, sweep, BENCH + (CROSSOVER if args.crossover else []),
                     peers=not args.no_peers)
        log("\n| (B,H,Hkv,Sq,Sk,D) | " + " | ".join(["variant µs (GB/s)"] * 1) + " |")
        for shape, res, kvb in rows:
            log(f"| {shape} | " + " ; ".join(f"{n} {ms * 1e3:.1f} ({kvb / (ms * 1e-3) / 1e9:.0f})"
                                              for n, ms in res.items() if ms) + " |")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
