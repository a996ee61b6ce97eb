# Per-launch spread of the decode split kernel's warp stamps (call 4): launches are the groups
# of STAMP lines whose starts lie within 20 µs; for each whole launch: the span (first start to
# last end), the warps' end times as quantiles of the span, and how many warps run at each tenth.
import os, sys, statistics as st
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stamp_launches import launches as group
# (t0, t1, sm, x, y, z, warp)
launches = group(sys.argv[1], lambda f: (int(f[6]), int(f[7]), int(f[5]), int(f[1]), int(f[2]), int(f[3]), int(f[4])),
                 lambda r: r[0])
n = max(len(l) for l in launches)
whole = [l for l in launches if len(l) == n]
print(f"{len(launches)} launches, {len(whole)} with all {n} warps")
spans, ends_q, starts = [], [], []
for l in whole:
    a = min(r[0] for r in l); e = max(r[1] for r in l)
    spans.append((e - a) / 1000)
    ends = sorted((r[1] - a) / 1000 for r in l)
    ends_q.append([ends[int(q * (len(ends) - 1))] for q in (0, .1, .25, .5, .75, .9, 1)])
    starts.append(max(r[0] for r in l) - a)
print("span us median", st.median(spans), "min", min(spans), "max", max(spans))
print("last start after first (us, median)", st.median(starts) / 1000)
qs = [st.median(q[i] for q in ends_q) for i in range(7)]
print("warp end time quantiles (us) 0/10/25/50/75/90/100%:", " ".join(f"{v:.1f}" for v in qs))
# mean active-warp fraction over the span: sum of warp durations / (warps * span)
fr = [sum((r[1] - min(x[0] for x in l)) for r in l) / (len(l) * (max(x[1] for x in l) - min(x[0] for x in l))) for l in whole]
print("warp-time busy fraction (median)", round(st.median(fr), 3))
# per-SM: end of its last warp, and how many blocks it ran
l = whole[len(whole) // 2]; a = min(r[0] for r in l)
per_sm = {}
for r in l: per_sm.setdefault(r[2], []).append(r)
cnt = {}
for sm, rs in per_sm.items():
    nb = len({(r[3], r[4], r[5]) for r in rs}); cnt.setdefault(nb, []).append(max(r[1] for r in rs) - a)
for nb, es in sorted(cnt.items()):
    print(f"SMs with {nb} block(s): {len(es)}, their last end (us) median {st.median(es)/1000:.1f} min {min(es)/1000:.1f} max {max(es)/1000:.1f}")
# within a block: spread of its 4 warps' ends
sp = []
blocks = {}
for r in l: blocks.setdefault((r[3], r[4], r[5]), []).append(r[1])
for b, es in blocks.items(): sp.append((max(es) - min(es)) / 1000)
print("within-block warp end spread (us) median", round(st.median(sp), 2), "max", round(max(sp), 2))
