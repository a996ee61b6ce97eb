"""Same-call A/B table from check_ab.sh's cfg_medians.txt: per row, each config's medians by
round, and the second config's change against the first (median of its rounds over the
first's). Usage: ab.py CFG_MEDIANS A B"""
import collections
import sys

path, a, b = sys.argv[1:4]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(path):
    f = line.split()
    if len(f) < 4 or not f[0].startswith("cfg="):
        continue
    rows[f[2]][f[0][4:]].append(float(f[3]))


def med(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


print(f"| row | {a} µs | {b} µs | {b}/{a} |\n|---|---|---|---|")
for name, c in rows.items():
    if c.get(a) and c.get(b):
        ma, mb = med(c[a]), med(c[b])
        fa = " / ".join(f"{x:.1f}" for x in c[a])
        fb = " / ".join(f"{x:.1f}" for x in c[b])
        print(f"| {name} | {fa} | {fb} | {100 * (mb / ma - 1):+.2f}% |")
