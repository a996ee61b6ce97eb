#!/usr/bin/env python3
"""Medians over CTAs of each role's phases (lab_stamps `# phase cta role t0 ... t17` lines, ns
after the CTA's entry), and the consumer epilogue's steps as differences:
  10 -> 12 first barrier, 12 -> 13 normalize + stage O, 13 -> 14 proxy fence + second barrier,
  14 -> 15 TMA store issue, 15 -> 11 persistent fence + release; 8 -> 10 between the last
  P·V's wait and the epilogue (tail merges); 16 -> 17 the item's naming and set-up (integer
  divisions), 17 -> 1 its Q wait and the turns' opening."""
import gzip
import statistics
import sys

for path in sys.argv[1:]:
    opener = gzip.open if path.endswith(".gz") else open
    rows = {}
    for line in opener(path, "rt"):
        if line.startswith("# phase"):
            p = line.split()
            rows.setdefault(int(p[3]), []).append([int(x) for x in p[4:]])
    print(path)
    for role, vals in sorted(rows.items()):
        med = [statistics.median(v[i] for v in vals) for i in range(len(vals[0]))]
        print(f"  role {role} (n {len(vals)}):", " ".join(f"{int(m)}" for m in med))
        if role < 3 and len(med) >= 18:
            steps = [("loop top -> set up", 16, 17), ("Q wait + turns", 17, 1), ("last P·V -> epilogue", 8, 10), ("first barrier", 10, 12), ("normalize + stage", 12, 13),
                     ("fence + barrier", 13, 14), ("TMA issue", 14, 15), ("fence + release", 15, 11),
                     ("item start -> first S", 1, 4), ("first softmax", 4, 5)]
            print("    " + ", ".join(f"{name} {med[b] - med[a]:.0f}" for name, a, b in steps))
