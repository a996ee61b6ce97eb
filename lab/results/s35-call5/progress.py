# Call 5's per-warp progress stamps: for the whole launches (every warp printed) whose span is
# within 10% of the shortest, the times at which warps reach 1/4, 1/2, 3/4 of their tiles and
# their end, split by SM group: "fast" SMs (last warp ends before 90% of the span) and the rest.
# A warp's rate per quarter tells whether the slow SMs speed up once the fast ones are idle.
import os, sys, statistics as st
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s35-call4"))
from stamp_launches import launches
# (t0, sm, tiles, [t0, t1/4, t1/2, t3/4, end], block)
L = launches(sys.argv[1], lambda f: (int(f[7]), int(f[5]), int(f[6]), [int(x) for x in f[7:12]], tuple(map(int, f[1:4]))),
             lambda r: r[0])
n = max(len(l) for l in L)
W = [l for l in L if len(l) == n]
span = lambda l: max(r[3][4] for r in l) - min(r[3][0] for r in l)
best = min(span(l) for l in W)
W = [l for l in W if span(l) < 1.1 * best]
print(f"{len(L)} launches, {len(W)} whole and within 10% of the shortest span ({best/1000:.1f} us)")
for l in W:
    a = min(r[3][0] for r in l); S = span(l)
    sm_end = {}
    for r in l: sm_end[r[1]] = max(sm_end.get(r[1], 0), r[3][4] - a)
    fast = {sm for sm, e in sm_end.items() if e < 0.9 * S}
    out = []
    for name, sel in (("fast", lambda r: r[1] in fast), ("slow", lambda r: r[1] not in fast)):
        g = [r for r in l if sel(r)]
        if not g: continue
        q = [st.median((r[3][i] - a) / 1000 for r in g) for i in range(5)]
        d = [q[i + 1] - q[i] for i in range(4)]
        out.append(f"{name} {len({r[1] for r in g})} SMs: t 1/4 {q[1]:.1f} 1/2 {q[2]:.1f} 3/4 {q[3]:.1f} end {q[4]:.1f} | per quarter {d[0]:.1f} {d[1]:.1f} {d[2]:.1f} {d[3]:.1f}")
    print(f"span {S/1000:.1f}: " + " || ".join(out))
