#!/usr/bin/env python3
"""Read-bandwidth ceiling for the decode rows (lab/stream/stream_lab.cu), timed as the decode
lab and torch are timed: triton.testing.do_bench median, L2 flushed before each rep.

    python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so
"""

import argparse
import ctypes
import time

import torch
import triton.testing

# The K+V bytes of the two long decode rows: (8,32,8,1,8192,128) and (1,32,8,1,32768,128), bf16.
ROWS = {"(8,32,8,1,8192)": 2 * 8 * 8192 * 8 * 128 * 2, "(1,32,8,1,32768)": 2 * 1 * 32768 * 8 * 128 * 2}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--rep-ms", type=int, default=100)
    ap.add_argument("--stream", default="default", help="placement: run on default | created | per-thread")
    ap.add_argument("--placement", default="", help="decode lab .so: time it on K/V in torch, pool and cudaMalloc memory")
    ap.add_argument("--ring", default="", help="decode lab .so: the (32,32,8,1,4096) row's read patterns (modes 3, 4) "
                    "beside our decode kernel and cuDNN, in alternating rounds")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="", help="--ring: run only configs whose label contains this")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.lib)
    lib.lab_stream.restype = ctypes.c_int
    lib.lab_stream.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong] + [ctypes.c_int] * 4 + [ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device {torch.cuda.get_device_name()} ({sms} SMs) {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")

    if args.ring:
        return ring(lib, args)
    if args.placement:
        st = {"default": None, "created": torch.cuda.Stream(), "per-thread": torch.cuda.ExternalStream(2)}[args.stream]
        print("stream", args.stream)
        if st is None:
            return placement(lib, args)
        with torch.cuda.stream(st):
            return placement(lib, args)
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=50, rep=args.rep_ms, return_mode="median")
    print(f"copy 1 GiB: {2 * src.numel() / (ms * 1e-3) / 1e9:.0f} GB/s (read + write)")
    del src, dst

    for name, nbytes in ROWS.items():
        buf = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
        stream = torch.cuda.current_stream().cuda_stream
        configs = []
        for blocks in (sms, 2 * sms, 4 * sms, 8 * sms):
            for threads in (256, 512, 1024):
                for unroll in (4, 8):
                    if threads == 1024 and unroll == 8:
                        continue
                    configs.append(("ldg slices", 0, blocks, threads, unroll, 0))
        heads = 8
        for splits in (4, 8, 16, 33, 66):
            for threads in (128, 256):
                for unroll in (1, 2):
                    configs.append(("ldg decode", 1, splits, threads, unroll, heads))
        for blocks in (sms, 2 * sms):
            for chunk, stages in ((4096, 8), (8192, 4), (8192, 8), (16384, 4), (16384, 6), (32768, 3)):
                if blocks == 2 * sms and chunk * stages > 100 * 1024:
                    continue
                configs.append(("bulk", 2, blocks, chunk, stages, 0))
        best = None
        for label, mode, a, b, c, h in configs:
            rc = lib.lab_stream(mode, buf.data_ptr(), nbytes, a, b, c, h, stream)
            if rc != 0:
                print(f"  {label} ({a},{b},{c}) rc {rc}")
                continue
            ms = triton.testing.do_bench(lambda: lib.lab_stream(mode, buf.data_ptr(), nbytes, a, b, c, h, stream),
                                         warmup=20, rep=args.rep_ms, return_mode="median")
            gbs = nbytes / (ms * 1e-3) / 1e9
            print(f"{name} {label:10s} a={a:5d} b={b:6d} c={c:2d}: {ms * 1e3:7.1f} us {gbs:5.0f} GB/s")
            if best is None or ms < best[0]:
                best = (ms, label, a, b, c)
        print(f"BEST {name}: {best[0] * 1e3:.1f} us = {nbytes / (best[0] * 1e-3) / 1e9:.0f} GB/s ({best[1]} {best[2:]})")
        del buf
        torch.cuda.empty_cache()


def ring(lib, args):
    """The (32,32,8,1,4096,128) bf16 decode row: its K+V read in cp.async rings of several
    shapes (stream_lab.cu read_ring), our decode kernel (decode lab) and cuDNN, each timed
    with do_bench in alternating rounds. GB/s = K+V bytes over the median."""
    import math
    import sys
    import os
    sys.path.insert(0, os.path.dirname(__file__) + "/../decode")
    sys.path.insert(0, os.path.dirname(__file__) + "/../../scripts")
    from decode_lab import Lab
    from bench_torch import BACKENDS, bench_one
    lib.lab_ring.restype = ctypes.c_int
    lib.lab_ring.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int] * 8 + [ctypes.c_void_p]
    lab = Lab(args.ring)
    b, h, hkv, sk, d = 32, 32, 8, 4096, 128
    q = torch.randn(b, 1, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(q)
    nbytes = 2 * k.numel() * 2
    scale = 1.0 / math.sqrt(d)
    stream = torch.cuda.current_stream().cuda_stream
    # (label, mode, hb, splits, threads, stages, delay)
    configs = []
    for stages in (2, 3, 4):
        for delay in (0, 96):
            configs.append((f"warp-ring hb1 s{stages} d{delay}", 3, 1, 1, 128, stages, delay))
            configs.append((f"block-ring hb1 s{stages} d{delay}", 4, 1, 1, 128, stages, delay))
    for hb, splits in ((2, 2), (4, 4)):
        for delay in (0, 96):
            configs.append((f"warp-ring hb{hb} x{splits} s3 d{delay}", 3, hb, splits, 128, 3, delay))
    configs.append(("warp-ring hb8 x4 w8 s2 d0", 3, 8, 4, 256, 2, 0))
    configs.append(("warp-ring hb1 x2 s3 d0", 3, 1, 2, 128, 3, 0))
    if args.only:
        configs = [c for c in configs if args.only in c[0]]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    runs = {}
    for rnd in range(args.rounds):
        lab.run(q, k, v, out, scale, 0.0, -1, -1, None, 0)
        ms = triton.testing.do_bench(lambda: lab.run(q, k, v, out, scale, 0.0, -1, -1, None, 0),
                                     warmup=50, rep=args.rep_ms, return_mode="median")
        runs.setdefault("ours (decode lab)", []).append(ms)
        ms = bench_one(BACKENDS["cudnn"], qt, kt, vt, args.rep_ms, enable_gqa=True)
        runs.setdefault("cudnn", []).append(ms)
        for label, mode, hb, splits, threads, stages, delay in configs:
            call = lambda: lib.lab_ring(mode, k.data_ptr(), v.data_ptr(), b, sk, hkv, hb, splits, threads, stages,
                                        delay, stream)
            rc = call()
            if rc != 0:
                print(f"  {label}: rc {rc}")
                continue
            ms = triton.testing.do_bench(call, warmup=20, rep=args.rep_ms, return_mode="median")
            runs.setdefault(label, []).append(ms)
        print(f"round {rnd + 1} done", flush=True)
    for label, ms in runs.items():
        print(f"{label:32s} " + "  ".join(f"{m * 1e3:7.1f} us {nbytes / (m * 1e-3) / 1e9:5.0f} GB/s" for m in ms))


class Raw:
    """A device buffer from the lab's allocators, shaped like a contiguous torch tensor."""

    def __init__(self, ptr, like):
        self.ptr, self.shape, self._stride, self.dtype = ptr, like.shape, like.stride(), like.dtype

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self._stride


def placement(lib, args):
    """The decode kernel and the stream reader on the same K/V bytes in three placements
    (torch, the default memory pool as candle allocates, cudaMalloc) and with other data."""
    import math
    import sys
    import os
    sys.path.insert(0, os.path.dirname(__file__) + "/../decode")
    from decode_lab import BENCH, Lab
    lab = Lab(args.placement)
    stream = torch.cuda.current_stream().cuda_stream
    lib.lab_malloc_async.restype = ctypes.c_void_p
    lib.lab_malloc_async.argtypes = [ctypes.c_longlong, ctypes.c_void_p]
    lib.lab_malloc.restype = ctypes.c_void_p
    lib.lab_malloc.argtypes = [ctypes.c_longlong]
    lib.lab_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
    for (b, h, hkv, sq, sk, d) in BENCH[:2] + BENCH[3:4]:
        q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(q)
        nbytes = k.numel() * 2
        scale, wr = 1.0 / math.sqrt(d), (0 if sq > 1 else -1)
        res = {}
        for where in ("torch", "pool", "cudaMalloc", "f32->bf16", "zeros", "torch again"):
            if where in ("torch", "torch again"):
                kk, vv = k, v
            elif where == "f32->bf16":
                kk = torch.randn(k.shape, device="cuda").to(torch.bfloat16)
                vv = torch.randn(v.shape, device="cuda").to(torch.bfloat16)
            elif where == "zeros":
                kk, vv = torch.zeros_like(k), torch.zeros_like(v)
            else:
                alloc = (lambda n: lib.lab_malloc_async(n, stream)) if where == "pool" else lib.lab_malloc
                pk, pv = alloc(nbytes), alloc(nbytes)
                assert pk and pv, where
                assert lib.lab_copy(pk, k.data_ptr(), nbytes) == 0 and lib.lab_copy(pv, v.data_ptr(), nbytes) == 0
                kk, vv = Raw(pk, k), Raw(pv, v)
            lab.run(q, kk, vv, out, scale, 0.0, -1, wr, None, 0)
            ms = triton.testing.do_bench(lambda: lab.run(q, kk, vv, out, scale, 0.0, -1, wr, None, 0),
                                         warmup=50, rep=args.rep_ms, return_mode="median")
            rd = triton.testing.do_bench(lambda: lib.lab_stream(1, kk.data_ptr(), nbytes, 66, 256, 2, hkv, stream),
                                         warmup=20, rep=args.rep_ms, return_mode="median")
            res[where] = (ms, rd)
        print(f"({b},{h},{hkv},{sq},{sk},{d}) " + "  ".join(
            f"{w}: decode {ms * 1e3:.1f} us, read K {rd * 1e3:.1f} us" for w, (ms, rd) in res.items()), flush=True)


if __name__ == "__main__":
    main()
