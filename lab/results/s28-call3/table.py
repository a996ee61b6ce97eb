# Issue 14's table from this call's files: ours (r/medians.txt, criterion medians) between two
# torch runs (r/torch{1,2}/bench_torch.md and decode/bench_torch.md, do_bench medians).
#   python3 table.py [DIR] [--readme]   # --readme: the README's columns (FA2 µs; no TF/s on decode)
import re, sys
args = [a for a in sys.argv[1:] if a != "--readme"]
readme = "--readme" in sys.argv[1:]
d = args[0] if args else "r"
ours = {}
for line in open(f"{d}/medians.txt"):
    m = re.match(r"cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+) us", line)
    if m:
        shape = tuple(int(x) for x in m.groups()[:6])
        ours[(shape, "causal" if m.group(7) else "none")] = float(m.group(8))
def torch(run):
    rows = {}
    for f in (f"{d}/torch{run}/bench_torch.md", f"{d}/torch{run}/decode/bench_torch.md"):
        for line in open(f):
            c = [x.strip() for x in line.split("|")]
            if len(c) > 8 and c[1] in ("prefill", "decode"):
                shape = tuple(int(x) for x in c[2].strip("()").split(","))
                mask = {"causal_lower_right": "causal"}.get(c[3], c[3])
                rows[(shape, mask)] = (c[1], float(c[4]), float(c[7]))
    return rows
t1, t2 = torch(1), torch(2)
if readme:
    print("| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s | FA2 µs | cuDNN µs (run 1 / 2) | FA2 time / ours | cuDNN time / ours (run 1 / 2) |")
    print("|---|---|---|---|---|---|---|---|---|")
else:
    print("| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s | cuDNN µs (run 1 / 2) | FA2 / ours (run 1) | cuDNN / ours (1 / 2) |")
    print("|---|---|---|---|---|---|---|---|")
met = rows = 0
for key, (kind, fa, cu) in t1.items():
    if key not in ours: continue
    (b, h, hk, sq, sk, dd), mask = key
    o = ours[key]
    flops = 4 * b * h * sq * sk * dd * (0.5 if mask == "causal" and sq == sk else 1)
    cu2 = t2[key][2]
    r1, r2 = cu / o, cu2 / o
    met += r1 >= 1 and r2 >= 1
    rows += 1
    f = lambda r: f"**{r:.3f}**" if r >= 1 else f"{r:.3f}"
    tf = flops / o / 1e6
    if readme:
        tfs = "–" if kind == "decode" else f"{tf:.0f}"
        shape = "(" + ",".join(map(str, key[0])) + ")"
        print(f"| {kind} | {shape} | {mask} | {o:.1f} | {tfs} | {fa:.1f} | {cu:.1f} / {cu2:.1f} | {fa / o:.2f} | {f(r1)} / {f(r2)} |")
    else:
        print(f"| {kind} | {key[0]} | {mask} | {o:.1f} | {tf:.0f} | {cu:.1f} / {cu2:.1f} | {fa / o:.2f} | {f(r1)} / {f(r2)} |")
print(f"\n{met} of {rows} rows at or above cuDNN in both runs.")
