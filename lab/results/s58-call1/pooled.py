# Issue 14's table pooled over one call's interleaved runs: torch 1, ours 1, torch 2, ours 2, ...,
# ours N, torch N+1 (after a discarded warm-up torch run). Per row: the median of ours over its
# N runs against the median of cuDNN over its N+1 runs, and the range of the per-table ratios
# (ours k against torch k and k+1). Decided before the call ran (session 58, call 1's prediction).
#   python3 pooled.py DIR N             # DIR/medians{1..N}.txt, DIR/torch{1..N+1}/
#   python3 pooled.py DIR N --readme DIR2 N2   # the README's table: DIR's rows (ours, TF/s, FA2,
#                                       # cuDNN) with DIR2's pooled ratio beside DIR's
import json, os, re, statistics, sys


def ours(d, k):
    rows = {}
    for line in open(f"{d}/medians{k}.txt"):
        m = re.match(r"cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+) us", line)
        if m:
            rows[(tuple(int(x) for x in m.groups()[:6]), "causal" if m.group(7) else "none")] = float(m.group(8))
    return rows


def torch(d, k):
    rows = {}
    for f in (f"{d}/torch{k}/bench_torch.md", f"{d}/torch{k}/decode/bench_torch.md"):
        for line in open(f):
            c = [x.strip() for x in line.split("|")]
            if len(c) > 8 and c[1] in ("prefill", "decode"):
                shape = tuple(int(x) for x in c[2].strip("()").split(","))
                rows[(shape, {"causal_lower_right": "causal"}.get(c[3], c[3]))] = (c[1], float(c[4]), float(c[7]))
    return rows


def peak(d, k):
    f = f"{d}/torch{k}/bench_torch.json"
    if not os.path.exists(f):
        return None
    mm = json.load(open(f))["meta"].get("matmul")
    return mm["peak_tflops"] if mm else None


def pooled(d, n):
    """{key: (kind, ours µs, cuDNN µs, FA2 µs, cuDNN/ours, min, max of the 2n per-table ratios)}, t1's order."""
    O = [ours(d, k) for k in range(1, n + 1)]
    T = [torch(d, k) for k in range(1, n + 2)]
    out = {}
    for key, (kind, _, _) in T[0].items():
        if not all(key in o for o in O):
            continue
        o = statistics.median(x[key] for x in O)
        cu = statistics.median(t[key][2] for t in T)
        fa = statistics.median(t[key][1] for t in T)
        per = [T[j][key][2] / O[k][key] for k in range(n) for j in (k, k + 1)]
        out[key] = (kind, o, cu, fa, cu / o, min(per), max(per))
    return out


def bold(r):
    return f"**{r:.3f}**" if r >= 1 else f"{r:.3f}"


def flops(key):
    (b, h, _, sq, sk, dd), mask = key
    return 4 * b * h * sq * sk * dd * (0.5 if mask == "causal" and sq == sk else 1)


if __name__ == "__main__":
    d, n = sys.argv[1], int(sys.argv[2])
    rows = pooled(d, n)
    if "--readme" in sys.argv:
        i = sys.argv.index("--readme")
        d2, n2 = sys.argv[i + 1], int(sys.argv[i + 2])
        rows2 = pooled(d2, n2)
        pk = max(p for p in (peak(d, k) for k in range(1, n + 2)) if p)
        print(f"| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs | ours TF/s (of matmul peak) | FA2 µs | cuDNN µs | FA2 time / ours | cuDNN time / ours (per-table range) | again on a second H200 (range) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        met = met2 = 0
        for key, (kind, o, cu, fa, r, lo, hi) in rows.items():
            r2, lo2, hi2 = rows2[key][4:]
            met += r >= 1; met2 += r2 >= 1
            tf = flops(key) / o / 1e6
            tfs = "–" if kind == "decode" else f"{tf:.0f} ({100 * tf / pk:.0f}%)"
            shape = "(" + ",".join(map(str, key[0])) + ")"
            print(f"| {kind} | {shape} | {key[1]} | {o:.1f} | {tfs} | {fa:.1f} | {cu:.1f} | {fa / o:.2f} | {bold(r)} ({lo:.3f}-{hi:.3f}) | {bold(r2)} ({lo2:.3f}-{hi2:.3f}) |")
        print(f"\n{met} of {len(rows)} rows at or above cuDNN in the first call, {met2} of {len(rows2)} in the second "
              f"(pooled medians); bf16 matmul peak {pk:.0f} TF/s (the best of the first call's torch runs).")
        sys.exit()
    print(f"| kind | (B,H,Hkv,Sq,Sk,D) | mask | ours µs (median of {n}) | cuDNN µs (median of {n + 1}) | FA2 µs (median) | cuDNN / ours | FA2 / ours | per-table cuDNN / ours, min-max |")
    print("|---|---|---|---|---|---|---|---|---|")
    met = 0
    for key, (kind, o, cu, fa, r, lo, hi) in rows.items():
        met += r >= 1
        shape = "(" + ", ".join(map(str, key[0])) + ")"
        print(f"| {kind} | {shape} | {key[1]} | {o:.1f} | {cu:.1f} | {fa:.1f} | {bold(r)} | {fa / o:.2f} | {lo:.3f}-{hi:.3f} |")
    print(f"\n{met} of {len(rows)} rows at or above cuDNN (pooled medians).")
