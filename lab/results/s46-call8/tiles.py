#!/usr/bin/env python3
"""Per-tile time of the persistent Hopper prefill from lab_stamps output (lines `cta consumer
item tile kb_lo kb_hi start_ns end_ns`): per consumer, each item's duration and the gap from
its end to the next item's start; medians over CTAs for whole tiles (kb_lo = 0 and kb_hi = the
tile's blocks), the first item apart; then the per-tile cost in key blocks between two files
whose tiles have B1 and B2 key blocks: o = (B2·T1 - B1·T2) / (T2 - T1)."""
import statistics
import sys


def load(path):
    items = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        p = line.split()
        if len(p) != 8:
            continue
        cta, cw, item, tile, lo, hi, st, en = (int(x) for x in p)
        items.setdefault((cta, cw), []).append((item, tile, lo, hi, st, en))
    return items


def summary(path):
    items = load(path)
    durs, gaps, firsts, blocks = [], [], [], set()
    for key, its in items.items():
        its.sort()
        for i, (item, tile, lo, hi, st, en) in enumerate(its):
            blocks.add(hi - lo)
            if i == 0:
                firsts.append(en - st)
            elif lo == 0:
                durs.append(en - st)
            if i + 1 < len(its):
                gaps.append(its[i + 1][4] - en)
    med = statistics.median
    nb = max(blocks)
    print(f"{path}: {len(items)} consumers, key blocks per whole tile {nb}; first item {med(firsts) / 1e3:.2f} us, "
          f"whole tiles {med(durs) / 1e3:.2f} us (p10 {sorted(durs)[len(durs) // 10] / 1e3:.2f}, p90 "
          f"{sorted(durs)[9 * len(durs) // 10] / 1e3:.2f}, n {len(durs)}), gap to the next item {med(gaps) / 1e3:.3f} us")
    return nb, med(durs) + med(gaps)


if __name__ == "__main__":
    r = [summary(p) for p in sys.argv[1:]]
    if len(r) == 2:
        (b1, t1), (b2, t2) = r
        per_block = (t2 - t1) / (b2 - b1)
        o = (b2 * t1 - b1 * t2) / (t2 - t1)
        print(f"per key block {per_block / 1e3:.3f} us; per tile beyond its blocks {o:.2f} blocks = {o * per_block / 1e3:.2f} us")
