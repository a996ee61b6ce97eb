#!/usr/bin/env python3
"""Our CPU forward against PyTorch's CPU SDPA, on the same cores and thread count, in one
run (issue 15's rows, f32 and bf16).

Run it pinned, e.g.

    taskset -c 0,1 python3 scripts/bench_torch_cpu.py --bin target/release/examples/bench_cpu \
        --threads 2 --out /tmp/cpu-bench

It sets RAYON_NUM_THREADS and torch.set_num_threads to --threads, and for each row and
dtype alternates: our binary (`examples/bench_cpu.rs`, one process per row and dtype,
inheriting this process's CPU affinity; 3 warm-ups, then its timed calls), then torch
(3 warm-ups, then as many timed calls as fit in about 2 s, 5 to 200), `--rounds` times
(default 2). Reported per row: the median of each side's medians, GFLOP/s (4·B·H·Sq·Sk·D,
halved for causal), ours / torch as a speed ratio (torch ms / our ms: ≥ 1 means we are
faster), and the fraction of the FMA peak (f32: 2 FMA units × 16 lanes × 2 flops × cores
× GHz) and, for bf16, of the AVX512-BF16 dot-product peak (twice that) and the AMX-BF16
peak (1024 bf16 flops per cycle per core), at --ghz (default: the `cpu MHz` of
/proc/cpuinfo, which under a hypervisor is the nominal clock, not the turbo one).

Torch's inputs are (B, H, S, D) contiguous; ours (B, S, H, D) as our API takes them.
Causal rows are square, where torch's top-left `is_causal` equals our bottom-right mask.
Decode rows (Sq = 1) use `enable_gqa=True`.

Writes cpu_bench.json (every measurement, lscpu flags, versions) and cpu_bench.md (the
table) into --out.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROWS = [
    (1, 8, 8, 512, 512, 64, False),
    (1, 16, 16, 2048, 2048, 64, False),
    (1, 16, 16, 2048, 2048, 64, True),
    (1, 32, 8, 1, 4096, 128, False),
]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def flops(b, h, sq, sk, d, causal):
    f = 4.0 * b * h * sq * sk * d
    return f / 2 if causal else f


def torch_median_ms(b, h, hkv, sq, sk, d, causal, dtype):
    q = torch.randn(b, h, sq, d, dtype=dtype)
    k = torch.randn(b, hkv, sk, d, dtype=dtype)
    v = torch.randn(b, hkv, sk, d, dtype=dtype)
    kw = {"is_causal": causal}
    if hkv != h:
        kw["enable_gqa"] = True
    fn = lambda: F.scaled_dot_product_attention(q, k, v, **kw)  # noqa: E731
    with torch.inference_mode():
        for _ in range(3):
            fn()
        t = time.perf_counter()
        fn()
        one = (time.perf_counter() - t) * 1e3
        n = max(5, min(200, int(2000.0 / max(one, 1e-3))))
        ms = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return ms[len(ms) // 2], ms


def ours(binary, row, dtype, threads, path):
    b, h, hkv, sq, sk, d, causal = row
    spec = f"{b},{h},{hkv},{sq},{sk},{d}" + (",causal" if causal else "")
    cmd = [binary, "--row", spec, "--dtype", dtype]
    if path:
        cmd += ["--path", path]
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def lscpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return {}
    info = {}
    for line in out.splitlines():
        if ":" in line:
            key, val = line.split(":", 1)
            info[key.strip()] = val.strip()
    return info


def nominal_ghz():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":")[1]) / 1e3
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the bench_cpu example binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--rows", default="", help="only these rows, by index into ROWS (0-3), comma-separated")
    ap.add_argument("--path", default="", help="force one CPU path for ours (FUSED_ATTN_CPU_PATH names)")
    ap.add_argument("--ghz", type=float, default=None)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(args.threads)
    cpu = lscpu()
    ghz = args.ghz or nominal_ghz()
    flags = set(cpu.get("Flags", "").split())
    fma_peak = 2 * 16 * 2 * args.threads * ghz if ghz and "avx512f" in flags else None
    amx_peak = 1024 * args.threads * ghz if ghz and "amx_bf16" in flags else None
    meta = {
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "model": cpu.get("Model name"),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "threads": args.threads,
        "flags": sorted(f for f in flags if f.startswith(("avx", "amx", "fma"))),
        "ghz_used_for_peaks": ghz,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "path": args.path or "auto",
    }
    print(json.dumps(meta), flush=True)
    results = []
    rows = [ROWS[int(i)] for i in args.rows.split(",")] if args.rows else ROWS
    for row in rows:
        for dt in args.dtypes.split(","):
            mine, theirs = [], []
            for _ in range(args.rounds):
                o = ours(args.bin, row, dt, args.threads, args.path)
                mine.append(o)
                t_med, t_all = torch_median_ms(*row, DTYPES[dt])
                theirs.append({"median_ms": t_med, "ms": t_all})
            om = sorted(x["median_ms"] for x in mine)[len(mine) // 2]
            tm = sorted(x["median_ms"] for x in theirs)[len(theirs) // 2]
            fl = flops(row[0], row[1], row[3], row[4], row[5], row[6])
            r = {
                "row": list(row[:6]),
                "causal": row[6],
                "dtype": dt,
                "ours_ms": om,
                "torch_ms": tm,
                "speed_vs_torch": tm / om,
                "ours_gflops": fl / om / 1e6,
                "torch_gflops": fl / tm / 1e6,
                "ours_path": mine[0]["path"],
                "ours_rounds": mine,
                "torch_rounds": theirs,
            }
            if fma_peak:
                peak = fma_peak * (2 if dt == "bf16" and "avx512_bf16" in flags else 1)
                r["ours_frac_vector_peak"] = r["ours_gflops"] / peak
                r["torch_frac_vector_peak"] = r["torch_gflops"] / peak
            if amx_peak and dt == "bf16":
                r["ours_frac_amx_peak"] = r["ours_gflops"] / amx_peak
                r["torch_frac_amx_peak"] = r["torch_gflops"] / amx_peak
            results.append(r)
            print(
                f"{str(tuple(row[:6])):28s} {'causal' if row[6] else '-':6s} {dt:4s} ours {om:9.3f} ms "
                f"({r['ours_gflops']:6.1f} GFLOP/s)  torch {tm:9.3f} ms ({r['torch_gflops']:6.1f})  "
                f"ours/torch speed {tm / om:5.2f}",
                flush=True,
            )
    with open(os.path.join(args.out, "cpu_bench.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(os.path.join(args.out, "cpu_bench.md"), "w") as f:
        f.write(f"{meta['model']} ({meta['host']}), CPUs {meta['cpus_allowed']}, {args.threads} threads, "
                f"torch {meta['torch']}, {meta['when']}\n\nflags: {' '.join(meta['flags'])}\n\n")
        f.write("| (B,H,Hkv,Sq,Sk,D) | mask | dtype | ours | torch SDPA | torch ms / our ms | ours GFLOP/s "
                "(of vector peak, AMX peak) |\n|---|---|---|---|---|---|---|\n")
        for r in results:
            frac = ""
            if "ours_frac_vector_peak" in r:
                frac = f" ({100 * r['ours_frac_vector_peak']:.0f}%"
                frac += f", {100 * r['ours_frac_amx_peak']:.1f}%)" if "ours_frac_amx_peak" in r else ")"
            f.write(f"| {','.join(map(str, r['row']))} | {'causal' if r['causal'] else '–'} | {r['dtype']} | "
                    f"{r['ours_ms']:.3f} ms | {r['torch_ms']:.3f} ms | {r['speed_vs_torch']:.2f} | "
                    f"{r['ours_gflops']:.0f}{frac} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
