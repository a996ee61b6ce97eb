# Session 29 call 4: ours (this call; launches past the warm-up, by kernel name) against
# cuDNN (call 3) under ncu on the rows call 3 missed; then the small rows cold (cache control
# all) and warm (none), medians of 8 launches.
import csv, glob, gzip, collections, statistics, sys
sys.path.insert(0, "../s29-call3")
KEYS = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Issue Slots Busy", "Executed Ipc Active",
        "Memory Throughput", "DRAM Throughput", "L2 Hit Rate", "Grid Size", "Block Size", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Achieved Occupancy"]
from short_rows import load, val  # ../s29-call3/short_rows.py
for ours in sorted(glob.glob("r/ours_*.csv.gz")):
    row = ours[len("r/ours_"):-len(".csv.gz")]
    print("##", row)
    for who, path in (("ours", ours), ("cudnn", "../s29-call3/r/cudnn_%s.csv.gz" % row)):
        for kern, m in load(path).items():
            print("  %-5s %s\n        %s" % (who, kern[:70], "; ".join("%s %s" % (k, val(m[k])) for k in KEYS if k in m)))
print("## small rows, ncu cache control all (cold) / none (warm), median µs of 8 launches")
for f in sorted(glob.glob("r/[cw]*_*.csv.gz")):
    d = [float(r[-1].replace(",", "")) / 1e3 for r in csv.reader(l for l in gzip.open(f, "rt") if l.startswith('"'))
         if len(r) > 14 and r[-3] == "gpu__time_duration.sum"]
    print("  %-50s %.2f" % (f[2:-7], statistics.median(d)))
