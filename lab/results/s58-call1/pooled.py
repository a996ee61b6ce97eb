# Issue 14's table pooled over one call's interleaved runs: torch 1, ours 1, torch 2, ours 2, ...,
# ours N, torch N+1 (after a discarded warm-up torch run). Per row: the median of ours over its
# N runs against the median of cuDNN over its N+1 runs, and the range of the per-table ratios
# (ours k against torch k and k+1). Decided before the call ran (session 58, call 1's prediction).
#   python3 pooled.py DIR N   # DIR/medians{1..N}.txt, DIR/torch{1..N+1}/
import re, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def ours(k):
    rows = {}
    for line in open(f"{d}/medians{k}.txt"):
        m = re.match(r"cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+) us", line)
        if m:
            rows[(tuple(int(x) for x in m.groups()[:6]), "causal" if m.group(7) else "none")] = float(m.group(8))
    return rows
def torch(k):
    rows = {}
    for f in (f"{d}/torch{k}/bench_torch.md", f"{d}/torch{k}/decode/bench_torch.md"):
        for line in open(f):
            c = [x.strip() for x in line.split("|")]
            if len(c) > 8 and c[1] in ("prefill", "decode"):
                shape = tuple(int(x) for x in c[2].strip("()").split(","))
                rows[(shape, {"causal_lower_right": "causal"}.get(c[3], c[3]))] = (c[1], float(c[4]), float(c[7]))
    return rows
O = [ours(k) for k in range(1, n + 1)]
T = [torch(k) for k in range(1, n + 2)]
print(f"| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs (median of {n}) | cuDNN µs (median of {n + 1}) | FA2 µs (median) | cuDNN / ours | FA2 / ours | per-table cuDNN / ours, min-max |")
print("|---|---|---|---|---|---|---|---|---|")
met = rows = 0
for key, (kind, _, _) in T[0].items():
    if not all(key in o for o in O): continue
    o = statistics.median(x[key] for x in O)
    cu = statistics.median(t[key][2] for t in T)
    fa = statistics.median(t[key][1] for t in T)
    per = [T[j][key][2] / O[k][key] for k in range(n) for j in (k, k + 1)]
    r = cu / o
    met += r >= 1; rows += 1
    shape = "(" + ", ".join(map(str, key[0])) + ")"
    print(f"| {kind} | {shape} | {key[1]} | {o:.1f} | {cu:.1f} | {fa:.1f} | {'**%.3f**' % r if r >= 1 else '%.3f' % r} | {fa / o:.2f} | {min(per):.3f}-{max(per):.3f} |")
print(f"\n{met} of {rows} rows at or above cuDNN (pooled medians).")
