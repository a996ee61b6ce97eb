# Session 29 call 2: the drawn-pieces A/B from r/envab_medians.txt (3 rounds alternating).
import re, collections, statistics
d = collections.defaultdict(list)
for l in open("r/envab_medians.txt"):
    m = re.match(r"cfg=(\w+) round=(\d) \S+/(\S+) ([\d.]+) us", l)
    d[(m.group(3), m.group(1))].append(float(m.group(4)))
for r in sorted(set(k[0] for k in d)):
    f, dr = d[(r, "fixed")], d[(r, "drawn")]
    print(f"{r:40s} fixed {' / '.join('%.1f' % x for x in f)}  drawn {' / '.join('%.1f' % x for x in dr)}"
          f"  median ratio {statistics.median(dr) / statistics.median(f):.4f}")
