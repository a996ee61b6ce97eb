#!/usr/bin/env python3
"""The decode rows under two L2 flushes, for decode lab builds side by side and cuDNN.

do_bench zeroes 256 MiB before every rep (`dirty`): the L2 then holds ~50 MB of dirty lines,
which the timed kernel's reads evict, so the DRAM writes them back inside the timed window.
`clean` sums the same buffer instead (reads only): the L2 holds clean lines, nothing to write
back. Each library (decode_lab.cu built with other flags, lab/build.sh LAB_DECODE_FLAGS) and
cuDNN are timed under both flushes, in alternating rounds, do_bench medians.

    python3 lab/decode/flush_ab.py --libs .decode-lab/libdecode_lab.so,.decode-lab/libdecode_lab_ef.so
"""

import argparse
import math
import os
import sys

import torch
import triton
import triton.testing

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from decode_lab import BENCH, Lab  # noqa: E402
from bench_torch import BACKENDS, bench_one  # noqa: E402

FLUSH = {"calls": 0}


def set_flush(mode):
    drv = triton.runtime.driver.active
    if not hasattr(set_flush, "orig"):
        set_flush.orig = drv.clear_cache

    def clean(cache):
        FLUSH["calls"] += 1
        cache.sum()

    drv.clear_cache = set_flush.orig if mode == "dirty" else clean


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", required=True, help="comma-separated decode lab libraries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=int, default=100)
    ap.add_argument("--rows", default="", help="comma-separated indices into decode_lab.BENCH (default all)")
    ap.add_argument("--flushes", default="dirty,clean")
    args = ap.parse_args()
    libs = [(os.path.basename(p).replace(".so", ""), Lab(p)) for p in args.libs.split(",")]
    rows = [BENCH[int(i)] for i in args.rows.split(",")] if args.rows else BENCH
    print(f"device {torch.cuda.get_device_name()}")
    res = {}
    data = []
    for (b, h, hkv, sq, sk, d) in rows:
        q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        data.append(((b, h, hkv, sq, sk, d), q, k, v, torch.empty_like(q)))
    # Same outputs from every library (the variants change only cache hints).
    for shape, q, k, v, out in data:
        wr = 0 if shape[3] > 1 else -1
        outs = []
        for _, lab in libs:
            lab.run(q, k, v, out, 1.0 / math.sqrt(shape[5]), 0.0, -1, wr, None, 0)
            outs.append(out.clone())
        for o in outs[1:]:
            assert torch.equal(o, outs[0]), f"{shape}: the libraries' outputs differ"
    for rnd in range(args.rounds):
        flushes = args.flushes.split(",")
        if rnd % 2:
            flushes = flushes[::-1]
        for fl in flushes:
            set_flush(fl)
            for shape, q, k, v, out in data:
                scale, wr = 1.0 / math.sqrt(shape[5]), (0 if shape[3] > 1 else -1)
                order = libs if rnd % 2 == 0 else libs[::-1]
                for name, lab in order:
                    ms = triton.testing.do_bench(lambda: lab.run(q, k, v, out, scale, 0.0, -1, wr, None, 0),
                                                 warmup=30, rep=args.rep_ms, return_mode="median")
                    res.setdefault((shape, fl, name), []).append(ms * 1e3)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                kw = {"enable_gqa": True}
                if shape[3] > 1:
                    from torch.nn.attention.bias import causal_lower_right
                    kw["attn_mask"] = causal_lower_right(shape[3], shape[4])
                ms = bench_one(BACKENDS["cudnn"], qt, kt, vt, args.rep_ms, **kw)
                res.setdefault((shape, fl, "cudnn"), []).append(ms * 1e3)
        print(f"round {rnd + 1} done (clean flushes so far {FLUSH['calls']})", flush=True)
    names = [n for n, _ in libs] + ["cudnn"]
    for shape, *_ in data:
        for fl in args.flushes.split(","):
            cud = sorted(res[(shape, fl, "cudnn")])
            cmed = cud[len(cud) // 2]
            cells = []
            for n in names:
                xs = res[(shape, fl, n)]
                med = sorted(xs)[len(xs) // 2]
                cells.append(f"{n} " + "/".join(f"{x:.1f}" for x in xs) + f" (cuDNN/this {cmed / med:.3f})")
            print(f"{shape} {fl:5s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
