import collections, re, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list)); cfgs = []
for line in open(sys.argv[1]):
    m = re.match(r"cfg=(\S+) round=(\d+) (\S+) ([\d.]+) us", line)
    if not m: continue
    c, row, us = m.group(1), m.group(3), float(m.group(4))
    if c not in cfgs: cfgs.append(c)
    rows[row][c].append(us)
for row, by in rows.items():
    base = statistics.median(by[cfgs[0]])
    print(row.ljust(42), " | ".join(f"{c} {' '.join(f'{x:.1f}' for x in by[c])} ({statistics.median(by[c])/base:.3f})" for c in cfgs))
