#!/usr/bin/env python3
"""Per row: each config's medians over the rounds (envab_medians.txt lines
`cfg=LABEL round=R BENCH/ROW VALUE us`) and the ratio of their medians."""
import collections
import sys

rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 5:
        continue
    cfg = parts[0].split("=", 1)[1]
    rows[parts[2]][cfg].append(float(parts[3]))
for row, cfgs in sorted(rows.items()):
    meds = {c: sorted(v)[len(v) // 2] for c, v in cfgs.items()}
    names = sorted(cfgs)
    cells = "  ".join(f"{c} " + "/".join(f"{x:.2f}" for x in cfgs[c]) for c in names)
    ratio = f"  {names[1]}/{names[0]} {meds[names[1]] / meds[names[0]]:.4f}" if len(names) == 2 else ""
    print(f"{row.split('/')[-1]:40s} {cells}{ratio}")
