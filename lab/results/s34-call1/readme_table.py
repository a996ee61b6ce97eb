# README-format table (FA2 µs column, shapes without spaces) from a table call's folder:
# ours = r/medians.txt, torch runs 1 and 2 = r/torch{1,2}/[decode/]bench_torch.md.
import re, sys
d = sys.argv[1]
ours = {}
for line in open(f"{d}/medians.txt"):
    m = re.match(r"cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+) us", line)
    if m:
        ours[(tuple(int(x) for x in m.groups()[:6]), "causal" if m.group(7) else "none")] = float(m.group(8))
def torch(run):
    rows = {}
    for f in (f"{d}/torch{run}/bench_torch.md", f"{d}/torch{run}/decode/bench_torch.md"):
        for line in open(f):
            c = [x.strip() for x in line.split("|")]
            if len(c) > 8 and c[1] in ("prefill", "decode"):
                shape = tuple(int(x) for x in c[2].strip("()").split(","))
                rows[(shape, {"causal_lower_right": "causal"}.get(c[3], c[3]))] = (c[1], float(c[4]), float(c[7]))
    return rows
t1, t2 = torch(1), torch(2)
b = lambda r: f"**{r:.3f}**" if r >= 1 else f"{r:.3f}"
print("| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s | FA2 µs | cuDNN µs (run 1 / 2) | FA2 time / ours | cuDNN time / ours (run 1 / 2) |")
print("|---|---|---|---|---|---|---|---|---|")
met = 0
for key, (kind, fa, cu) in t1.items():
    if key not in ours: continue
    (bb, h, hk, sq, sk, dd), mask = key
    o, cu2 = ours[key], t2[key][2]
    tf = "–" if kind == "decode" else f"{4 * bb * h * sq * sk * dd * (0.5 if mask == 'causal' else 1) / o / 1e6:.0f}"
    met += cu / o >= 1 and cu2 / o >= 1
    print(f"| {kind} | ({','.join(map(str, key[0]))}) | {mask} | {o:.1f} | {tf} | {fa:.1f} | {cu:.1f} / {cu2:.1f} | {fa / o:.2f} | {b(cu / o)} / {b(cu2 / o)} |")
print(f"\n{met} of {len(ours)} rows at or above cuDNN in both runs.")
