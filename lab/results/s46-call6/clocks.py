#!/usr/bin/env python3
"""Median SM clock and power of each marked run (marks.txt `HH:MM:SS.fff start LABEL` /
`... end LABEL`, clocks.csv from nvidia-smi -lms 50), the first second of each run dropped."""
import sys
from datetime import datetime


def t(s):
    return datetime.strptime(s.strip()[-12:], "%H:%M:%S.%f") if "." in s else datetime.strptime(s.strip()[-8:], "%H:%M:%S")


r = sys.argv[1]
samples = []
for line in open(f"{r}/clocks.csv"):
    p = [x.strip() for x in line.split(",")]
    if len(p) < 4 or "MHz" not in p[1]:
        continue
    samples.append((t(p[0].split()[1]), float(p[1].split()[0]), float(p[3].split()[0]), p[4] if len(p) > 4 else ""))
runs = {}
for line in open(f"{r}/marks.txt"):
    ts, kind, label = line.split(" ", 2)
    runs.setdefault(label.strip(), {})[kind] = t(ts)
for label, se in runs.items():
    if "start" not in se or "end" not in se:
        continue
    xs = [(c, w, why) for (ts, c, w, why) in samples if (ts - se["start"]).total_seconds() > 1.0 and ts < se["end"]]
    if not xs:
        print(f"{label}: no samples")
        continue
    cs = sorted(c for c, _, _ in xs)
    ws = sorted(w for _, w, _ in xs)
    reasons = sorted({why for _, _, why in xs})
    print(f"{label:40s} n={len(xs):3d} SM clock median {cs[len(cs) // 2]:.0f} MHz (min {cs[0]:.0f}, max {cs[-1]:.0f})"
          f"  power median {ws[len(ws) // 2]:.0f} W (max {ws[-1]:.0f})  throttle {' '.join(reasons)}")
