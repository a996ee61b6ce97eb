#!/usr/bin/env python3
"""Where a kernel's warps stall, instruction by instruction, from ncu's source page.

    ncu ... -o REP CMD; ncu -i REP.ncu-rep --page source --csv --print-source sass > F.csv
    python3 lab/tools/sass_stalls.py [--counts N,M] [--top K] F.csv[.gz] ...

Per file: the stall reasons of all samples; the instructions grouped by how often each ran
(its execution count: the key-block loop is the HGMMA-holding group with the most samples;
the per-tile code and the idle producer warps' waits are other groups), each group's samples
and reasons; the loop body's opcode mix (instructions per key block per warp); the K
instructions holding the most samples (default 12), among those that ran N or M times with
`--counts`. Session 60 (lab/results/s60-call1/); it replaces lab/decode/sass_stalls.py,
lab/tools/sass_by_count.py and lab/tools/sass_top_by_count.py (sessions 23-47, in git
history). lab/tools/loop_ops.py compares two files' loop bodies opcode by opcode.
"""
import csv
import gzip
import sys
from collections import Counter, defaultdict


def num(x):
    try:
        return int(x.replace(",", ""))
    except ValueError:
        return 0


def opcode(src):
    return [o for o in src.split() if not o.startswith("@")][0].split(".")[0]


def report(path, counts=None, top_n=12):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))
    kernel = rows[0][1] if len(rows[0]) > 1 else "?"
    hdr = rows[1]
    ix = {h: i for i, h in enumerate(hdr)}
    data = [d for d in rows[2:] if len(d) >= len(hdr)]
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    samples = lambda d: num(d[ix["Warp Stall Sampling (All Samples)"]])
    execs = lambda d: num(d[ix["Instructions Executed"]])
    total = sum(samples(d) for d in data)
    print(f"== {path}: {kernel}, {len(data)} SASS, {total} samples")
    by_reason = Counter()
    for d in data:
        for r in reasons:
            by_reason[r[6:]] += num(d[ix[r]])
    print("  all:", ", ".join(f"{r} {v / total * 100:.1f}%" for r, v in by_reason.most_common() if v > total * 0.005))
    groups = defaultdict(list)
    for d in data:
        groups[execs(d)].append(d)
    # The key-block loop: of the groups holding HGMMA instructions, the one with the most
    # samples (the per-tile code holds more HGMMAs, unrolled, but runs far less).
    hgmma = {execs(d) for d in data if opcode(d[ix["Source"]]) == "HGMMA" and execs(d) > 0}
    loop = max(hgmma, key=lambda e: sum(samples(d) for d in groups[e])) if hgmma else None
    print("  groups by execution count (the most samples first):")
    for e, ds in sorted(groups.items(), key=lambda kv: -sum(samples(d) for d in kv[1]))[:8]:
        s = sum(samples(d) for d in ds)
        rs = Counter()
        for d in ds:
            for r in reasons:
                rs[r[6:]] += num(d[ix[r]])
        tag = " (key-block loop)" if e == loop else ""
        top = ", ".join(f"{r} {v / max(s, 1) * 100:.0f}%" for r, v in rs.most_common(4) if v)
        print(f"    ran {e:>9}x: {len(ds):4d} SASS, {s:6d} samples ({s / total * 100:4.1f}%){tag}: {top}")
    if loop is not None:
        mix = Counter(opcode(d[ix["Source"]]) for d in groups[loop])
        print(f"  loop body: {len(groups[loop])} instructions per key block per warp:",
              ", ".join(f"{o} {n}" for o, n in mix.most_common(12)))
    pool = [d for d in data if counts is None or execs(d) in counts]
    print("  top instructions" + (f" of those that ran {sorted(counts)} times:" if counts else ":"))
    for d in sorted(pool, key=lambda d: -samples(d))[:top_n]:
        rs = sorted(((r[6:], num(d[ix[r]])) for r in reasons), key=lambda x: -x[1])[:3]
        print(f"    {samples(d) / total * 100:5.1f}% ran {execs(d):>8}x  {d[ix['Source']][:64]:64s}",
              " ".join(f"{a}={b}" for a, b in rs if b))


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--counts", help="comma-separated execution counts the top list keeps")
    ap.add_argument("--top", type=int, default=12, help="how many instructions the top list shows")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    wanted = {int(x) for x in args.counts.split(",")} if args.counts else None
    try:
        for p in args.files:
            report(p, wanted, args.top)
    except BrokenPipeError:  # | head
        sys.stderr.close()
