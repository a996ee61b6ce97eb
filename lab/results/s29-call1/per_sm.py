# Session 29 call 1: is the spread of per-block tile time a property of the SM? For each stamps
# file, each CTA's mean item time over its whole tiles 1..29 (both consumers, start of item 1
# to end of item 29), keyed by SM id; then the correlation of the per-SM times between files,
# and the per-GPC-ish groups (SM id // 16 as a proxy; the real GPC map is not known).
import gzip, re, statistics, sys, collections
def load(f):
    lines = gzip.open(f, "rt").read().splitlines()
    entries = [int(x) for x in re.findall(r"-?\d+", lines[1].split(":", 1)[1])]
    sms = [int(x) for x in re.findall(r"-?\d+", lines[2].split(":", 1)[1])]
    items = collections.defaultdict(dict)
    for l in lines[3:]:
        if l.startswith("#") or not l.strip(): continue
        cta, cons, item, tile, lo, hi, st, en = map(int, l.split())
        st, en = st + entries[cta], en + entries[cta]
        p = items[cta].get(item)
        items[cta][item] = (min(st, p[0]) if p else st, max(en, p[1]) if p else en, tile)
    per_sm = {}
    for c, its in items.items():
        n = max(i for i in its if its[i][1] - its[i][0] > 0 and i <= 30)
        # whole tiles only: items 1..n-1 (the last whole round may be partial on some rows)
        whole = [i for i in range(1, 30) if i in its]
        per_sm[sms[c]] = (its[whole[-1]][1] - its[whole[0]][0]) / len(whole) / 1e3
    return per_sm
data = [(f, load(f)) for f in sys.argv[1:]]
def corr(a, b):
    ks = sorted(set(a) & set(b)); x = [a[k] for k in ks]; y = [b[k] for k in ks]
    mx, my = statistics.mean(x), statistics.mean(y)
    sx = sum((u - mx) ** 2 for u in x) ** .5; sy = sum((v - my) ** 2 for v in y) ** .5
    return sum((u - mx) * (v - my) for u, v in zip(x, y)) / (sx * sy)
for f, d in data:
    v = sorted(d.values())
    print("%s: SMs %d, µs per tile min %.2f p10 %.2f median %.2f p90 %.2f max %.2f" % (f.split("/")[-1], len(v), v[0], v[len(v)//10], statistics.median(v), v[9*len(v)//10], v[-1]))
    slow = sorted(d, key=d.get)[-12:]; fast = sorted(d, key=d.get)[:12]
    print("   slowest SMs", sorted(slow), " fastest", sorted(fast))
    groups = collections.defaultdict(list)
    for s, t in d.items(): groups[s // 2].append(t)  # TPC pairs
    tpc = [statistics.mean(g) for g in groups.values()]
    within = statistics.mean(abs(g[0] - g[1]) for g in groups.values() if len(g) == 2)
    print("   TPC pairs: mean |difference| within a pair %.3f µs, spread of pair means %.2f-%.2f" % (within, min(tpc), max(tpc)))
for i in range(len(data)):
    for j in range(i + 1, len(data)):
        print("corr %s ~ %s: %.3f" % (data[i][0].split("/")[-1][:12], data[j][0].split("/")[-1][:12], corr(data[i][1], data[j][1])))
