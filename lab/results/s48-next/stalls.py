#!/usr/bin/env python3
"""Stall samples by SASS instruction from ncu's source page CSV (call.sh's *_sass.csv.gz).

    python3 stalls.py FILE.csv.gz [--top N] [--window LO:HI ...]

Written before any such CSV was seen (session 47): it finds the columns by name. The address
column is the first whose name holds "Address", the SASS text the first holding "Source", and
the sample columns every numeric column whose name holds "Sampl" or "stall" (case-insensitive).
Prints the columns it found, the N instructions with the most samples (with their nonzero
sample columns), and per --window (hex addresses, HI exclusive) the sum of every sample column:
the set-up's and the epilogue's windows come from the printed SASS (the loop top's BSYNC to the
Q wait's SYNCS.PHASECHK; the BAR.SYNC before the STSMs to the UTMASTG)."""
import csv
import gzip
import sys

args = sys.argv[1:]
path = args[0]
top = int(args[args.index("--top") + 1]) if "--top" in args else 40
windows = [tuple(int(x, 16) for x in a.split(":")) for i, a in enumerate(args) if i > 0 and args[i - 1] == "--window"]
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt", newline="") as f:
    rows = list(csv.reader(f))
head = next(i for i, r in enumerate(rows) if any("Address" in c for c in r))
cols = rows[head]
body = [r for r in rows[head + 1:] if len(r) == len(cols)]
addr_c = next(i for i, c in enumerate(cols) if "Address" in c)
src_c = next(i for i, c in enumerate(cols) if "Source" in c)


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return None


samp = [i for i, c in enumerate(cols) if ("sampl" in c.lower() or "stall" in c.lower()) and all(num(r[i]) is not None for r in body[:50])]
print("columns:", {i: cols[i] for i in [addr_c, src_c] + samp})
total = samp[0] if samp else None
recs = []
for r in body:
    try:
        a = int(r[addr_c], 16)
    except ValueError:
        continue
    recs.append((a, r[src_c].strip(), [num(r[i]) or 0.0 for i in samp]))
print(f"{len(recs)} instructions; all samples in column '{cols[total]}': {sum(x[2][0] for x in recs):.0f}")
for a, s, v in sorted(recs, key=lambda x: -x[2][0])[:top]:
    nz = ", ".join(f"{cols[samp[j]]}={v[j]:.0f}" for j in range(1, len(v)) if v[j])
    print(f"{a:#07x} {v[0]:8.0f}  {s[:60]:60s} {nz}")
for lo, hi in windows:
    sel = [x for x in recs if lo <= x[0] < hi]
    sums = [sum(x[2][j] for x in sel) for j in range(len(samp))]
    print(f"window {lo:#x}:{hi:#x} ({len(sel)} instructions):",
          ", ".join(f"{cols[samp[j]]}={sums[j]:.0f}" for j in range(len(samp)) if sums[j]))
