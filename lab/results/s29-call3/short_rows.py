# Session 29 call 3: ours against cuDNN under ncu (one launch each after warm-up, base clocks
# ~1.36 GHz under ncu) on issue 14's short rows; the sections' key metrics side by side.
import csv, glob, gzip, collections, statistics
KEYS = ["Duration", "SM Frequency", "Compute (SM) Throughput", "SM Busy", "Issue Slots Busy", "Executed Ipc Active",
        "Memory Throughput", "DRAM Throughput", "L2 Hit Rate", "Grid Size", "Block Size", "Cluster Size",
        "Registers Per Thread", "Dynamic Shared Memory Per Block", "Achieved Occupancy", "Waves Per SM"]
def load(path):
    per = collections.defaultdict(lambda: collections.defaultdict(list))  # kernel -> metric -> values
    lines = [l for l in gzip.open(path, "rt") if l.startswith('"')]
    for r in csv.reader(lines):
        if len(r) < 15 or r[0] == "ID": continue
        per[r[4]][r[12]].append(r[14])
    return per
def val(vs):
    try: return "%g" % statistics.median(float(v.replace(",", "")) for v in vs)
    except ValueError: return vs[0]
if __name__ == "__main__":
    for ours in sorted(glob.glob("r/ours_*.csv.gz")):
        row = ours[len("r/ours_"):-len(".csv.gz")]
        print("##", row)
        for who, path in (("ours", ours), ("cudnn", ours.replace("ours_", "cudnn_"))):
            for kern, m in load(path).items():
                print("  %-5s %-70s" % (who, kern[:70]))
                print("        " + "; ".join("%s %s" % (k, val(m[k])) for k in KEYS if k in m))
