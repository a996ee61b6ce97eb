# Issue 14's table from this call's files: ours (r/medians.txt, criterion medians) between two
# torch runs (r/torch{1,2}/bench_torch.md and decode/bench_torch.md, do_bench medians).
#   python3 table.py [DIR] [--readme]   # --readme: the README's columns (FA2 µs; no TF/s on decode)
# With the bf16 matmul peak in the torch runs' bench_torch.json (scripts/bench_torch.py since
# session 52), TF/s cells carry the fraction of run 1's peak, and a last line gives the
# unmasked rows against the FlashAttention-3 paper's figures (H100 SXM5, 16k keys).
import json, os, re, sys
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
def peak(run):
    f = f"{d}/torch{run}/bench_torch.json"
    if not os.path.exists(f): return None
    mm = json.load(open(f))["meta"].get("matmul")
    return mm["peak_tflops"] if mm else None
p1, p2 = peak(1), peak(2)
of_peak = lambda tf: f"{tf:.0f} ({100 * tf / p1:.0f}%)" if p1 else f"{tf:.0f}"
fa3 = {64: 497, 128: 648, 256: 740}
fa3_notes = []
if readme:
    print("| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s" + (" (of matmul peak)" if p1 else "") + " | FA2 µs | cuDNN µs (run 1 / 2) | FA2 time / ours | cuDNN time / ours (run 1 / 2) |")
    print("|---|---|---|---|---|---|---|---|---|")
else:
    print("| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s" + (" (of matmul peak)" if p1 else "") + " | cuDNN µs (run 1 / 2) | FA2 / ours (run 1) | cuDNN / ours (1 / 2) |")
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
    if kind == "prefill" and mask == "none" and hk == h and dd in fa3 and sk >= (16384 if dd == 128 else 2048):
        fa3_notes.append(f"d{dd} {sk} keys {tf:.0f} TF/s = {tf / fa3[dd]:.2f}× FA3's {fa3[dd]} (16k)")
    if readme:
        tfs = "–" if kind == "decode" else of_peak(tf)
        shape = "(" + ",".join(map(str, key[0])) + ")"
        print(f"| {kind} | {shape} | {mask} | {o:.1f} | {tfs} | {fa:.1f} | {cu:.1f} / {cu2:.1f} | {fa / o:.2f} | {f(r1)} / {f(r2)} |")
    else:
        print(f"| {kind} | {key[0]} | {mask} | {o:.1f} | {of_peak(tf)} | {cu:.1f} / {cu2:.1f} | {fa / o:.2f} | {f(r1)} / {f(r2)} |")
print(f"\n{met} of {rows} rows at or above cuDNN in both runs.")
if p1:
    print(f"bf16 matmul peak (torch.matmul, do_bench): {p1:.0f} TF/s in run 1, {p2:.0f} in run 2." if p2 else f"bf16 matmul peak: {p1:.0f} TF/s.")
if fa3_notes:
    print("Against the FlashAttention-3 paper (non-causal): " + "; ".join(fa3_notes) + ".")
