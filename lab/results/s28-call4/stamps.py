# The d128 2048 row's last round from the lab stamps (call 4): per CTA, the end of its 31st
# item (both consumers), the pieces' items, and the kernel's last end, with and without the
# tail split. Times in µs after the first CTA's entry.
import gzip, re, statistics, sys, collections
for f in sys.argv[1:]:
    lines = gzip.open(f, "rt").read().splitlines()
    entries = [int(x) for x in re.findall(r"-?\d+", lines[1].split(":", 1)[1])]
    items = collections.defaultdict(dict)  # cta -> item -> (tile, lo, hi, start, end) max over consumers
    for l in lines[2:]:
        if l.startswith("#") or not l.strip(): continue
        cta, cons, item, tile, lo, hi, st, en = map(int, l.split())
        st, en = (st + entries[cta]) / 1e3, (en + entries[cta]) / 1e3
        prev = items[cta].get(item)
        items[cta][item] = (tile, lo, hi, min(st, prev[3]) if prev else st, max(en, prev[4]) if prev else en)
    ends30 = sorted(items[c][30][4] for c in items if 30 in items[c])
    print(f, "CTAs", len(items))
    print("  31st item ends: min %.1f median %.1f max %.1f" % (ends30[0], statistics.median(ends30), ends30[-1]))
    extra = sorted((c, it) for c in items for it in items[c] if it >= 31)
    tiles = collections.defaultdict(list)
    for c, it in extra:
        t, lo, hi, st, en = items[c][it]
        tiles[t].append((c, lo, hi, st, en))
    for t, ps in sorted(tiles.items()):
        print("  tile %d: %d pieces; starts %.1f-%.1f, ends %.1f-%.1f (%.1f after the pieces' 31st items ended at most)" % (
            t, len(ps), min(p[3] for p in ps), max(p[3] for p in ps), min(p[4] for p in ps), max(p[4] for p in ps),
            max(p[4] for p in ps) - max(items[p[0]][30][4] for p in ps)))
        durs = [p[4] - p[3] for p in ps]
        print("    piece durations %.1f-%.1f µs (median %.1f); key blocks %s" % (min(durs), max(durs), statistics.median(durs), sorted(set(p[2]-p[1] for p in ps))))
    last = max(items[c][it][4] for c in items for it in items[c])
    print("  kernel's last end %.1f µs; whole-round time (median item) %.1f µs" % (last, statistics.median(
        items[c][it][4] - items[c][it][3] for c in items for it in items[c] if 5 <= it < 30)))
