#!/usr/bin/env python3
"""Per-row table of lab/hopper/ab.sh's ab_medians.txt: each pack's medians by round and the
ratio of its median to the first pack's.   python3 lab/hopper/ab_table.py r/ab_medians.txt"""
import collections, re, statistics, sys

rows = collections.defaultdict(lambda: collections.defaultdict(list))
packs = []
for line in open(sys.argv[1]):
    m = re.match(r"pack=(\S+) round=(\d+) (\S+) ([\d.]+) us", line)
    if not m:
        continue
    pack, row, us = m.group(1), m.group(3), float(m.group(4))
    if pack not in packs:
        packs.append(pack)
    rows[row][pack].append(us)
for row, by in rows.items():
    base = statistics.median(by[packs[0]]) if by.get(packs[0]) else None
    cells = []
    for pk in packs:
        v = by.get(pk, [])
        r = f" ({statistics.median(v) / base:.3f})" if v and base and pk != packs[0] else ""
        cells.append(f"{pk} {' '.join(f'{x:.1f}' for x in v)}{r}")
    print(f"{row.split('/')[-1]:42s} " + " | ".join(cells))
