# Session 29 call 5: the small rows' first items in phases (examples/lab_stamps.rs `# phase`
# lines), median over CTAs per role and rank (even CTA: rank 0, odd: rank 1 of the pair), in
# µs after the CTA's entry; with ncu's kernel duration of the stamped launch (launch 5).
import gzip, glob, statistics, csv, collections
names = ["wg start", "item", "Q", "K0", "QK0", "sm0", "loop", "Vlast", "PVlast", "pair", "epi", "stored"]
for f in sorted(glob.glob("r/phases_*.txt.gz")):
    lines = gzip.open(f, "rt").read().splitlines()
    dur = [r[-1] for r in csv.reader(l for l in lines if l.startswith('"')) if len(r) > 14 and r[-3] == "gpu__time_duration.sum"]
    ph = collections.defaultdict(list)
    for l in lines:
        if l.startswith("# phase "):
            cta, role, *t = map(int, l.split()[2:])
            ph[(role, cta % 2)].append(t)
    print("%s  (ncu durations of launches: %s µs)" % (f[2:-7], " ".join("%.1f" % (float(d.replace(",", "")) / 1e3) for d in dur)))
    for (role, rank), ts in sorted(ph.items()):
        med = [statistics.median(t[k] for t in ts) / 1e3 for k in range(12)]
        label = "producer" if role == 3 else "consumer %d" % role
        cols = names if role != 3 else ["start", "pre-Q", "post-Q", "KV issued"] + [""] * 8
        print("  %-10s rank %d: %s" % (label, rank, "  ".join("%s %.2f" % (n, m) for n, m in zip(cols, med) if n and m > 0)))
