#!/usr/bin/env python3
"""Renders the README's charts (docs/charts/*.svg) from the committed raw results.

    python3 -m pip install matplotlib      # once
    python3 scripts/charts.py              # rewrites docs/charts/*.svg

Every number is read from a committed raw result under docs/results/ or lab/results/ (named in
each chart's caption), except the CPU llama rows, which exist only as the README's table (no raw
log was committed); those are written out below with that source. Re-run this script whenever a
README table is re-measured and its raw file replaced (and point the paths below at it).

    gpu-h200.svg              README "GPU prefill and decode, H200": session 58 calls 1 and 4
    gpu-h100.svg              README "GPU prefill and decode, H100": session 57 call 1
    gpu-prefill/decode.svg    docs/measurements.md "GPU prefill, H100 (session 20)"
    cpu-torch.svg             README "CPU against PyTorch's CPU SDPA" (Sapphire Rapids, Zen 4)
    cpu.svg                   README "CPU against candle's naive attention" (older Zen 3 run)
    llama-tokens.svg          README "LLaMA example"

The H200 chart runs lab/results/s58-call1/pooled.py and the H100 chart lab/results/s28-call3/table.py
(the scripts that build the README's tables) and take their parsed rows, so the charts' ratios are the tables'.
"""
import contextlib
import io
import json
import pathlib
import re
import runpy
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
OUT = ROOT / "docs" / "charts"
H100_RUNS = RESULTS / "h100-2026-11-27-session20.md"  # runs A (prefill) and B (decode)
H100_LLAMA = RESULTS / "h100-2026-11-22-final.md"  # runs 14 and 15
CPU_CRITERION = RESULTS / "cpu-criterion-1537ee7.txt"  # run 1 = the README table
LAB = ROOT / "lab" / "results"
TABLE_PY = LAB / "s28-call3" / "table.py"  # a table call's table (ours between two torch runs)
POOLED_PY = LAB / "s58-call1" / "pooled.py"  # a pooled call's table (ours 3 runs between torch's 4)
H200_RUN = LAB / "s58-call1" / "r"  # medians{1..3}.txt (ours), torch{1..4}/ (PyTorch)
H200_RUN2 = LAB / "s58-call4" / "r"  # the same call on another H200
H100_RUN = LAB / "s57-call1" / "r"  # medians.txt (ours), torch1/ and torch2/ (PyTorch before and after)
CPU_TORCH = (  # the README's "CPU against PyTorch's CPU SDPA" tables: (title, bench_torch_cpu.py json)
    ("Sapphire Rapids, AMX allowed", LAB / "s11-cpu-host" / "cpu_bench.json"),
    ("Sapphire Rapids, no AMX", LAB / "s11-cpu-host" / "noamx" / "cpu_bench.json"),
    ("AMD Zen 4 (AVX-512, no AMX)", LAB / "s21-cpu-zen4-torch" / "cpu_bench.json"),
)

# The README's CPU llama table (SmolLM2-135M-Instruct Q4_1 → f32, 2-core machine, --repeats 3,
# 2026-11-22 05:53 UTC): (prompt, prefill tok/s fused, naive, decode tok/s fused, naive).
CPU_LLAMA = [(128, 241.0, 204.9, 18.04, 13.57), (2048, 327.8, 89.9, 17.13, 10.33)]

plt.rcParams.update({"font.size": 9, "svg.fonttype": "none", "svg.hashsalt": "candle-fused-attn"})
COLORS = {"ours": "#d62728", "FA2": "#1f77b4", "cuDNN": "#7f7f7f", "naive": "#bcbd22", "torch": "#1f77b4"}


def sections(text, heading):
    """The text of each run ('## Run X', with its subsections) whose title starts with `heading`."""
    parts = re.split(r"^(?=## Run )", text, flags=re.M)
    return [p for p in parts if p.startswith("## " + heading)]


def torch_rows(section):
    """PyTorch SDPA table rows: {(kind, shape, mask): (flash µs, cuDNN µs)}."""
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (prefill|decode) \| \(([\d,]+)\) \| (\w+) \| ([\d.]+) \|[^|]*\|[^|]*\| ([\d.]+) \|", line)
        if m:
            shape = tuple(int(x) for x in m.group(2).split(","))
            rows[(m.group(1), shape, m.group(3))] = (float(m.group(4)), float(m.group(5)))
    return rows


def criterion_rows(section):
    """Our criterion times in µs: {(shape, causal): µs} from the 'time: [lo mid hi]' lines."""
    rows, medians = {}, {}
    name = None
    for line in section.splitlines():
        m = re.match(r"cuda_fused_attn_bf16/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)?(?: ([\d.]+))?\s*$",
                     line.strip())
        if m:
            name = (tuple(int(m.group(i)) for i in range(1, 7)), bool(m.group(7)))
            if m.group(8):  # the 'criterion medians (µs)' list: estimates.json's median
                medians[name] = float(m.group(8))
                name = None
            continue
        t = re.search(r"time:\s+\[\S+ \S+ ([\d.]+) (µs|ms)", line)
        if t and name:
            rows[name] = float(t.group(1)) * (1000.0 if t.group(2) == "ms" else 1.0)
            name = None
    rows.update(medians)
    return rows


def flops(shape, causal):
    b, h, _, sq, sk, d = shape
    return 4 * b * h * sq * sk * d / (2 if causal else 1)


def kv_bytes(shape):
    b, _, hkv, _, sk, d = shape
    return 2 * b * sk * hkv * d * 2  # K and V, bf16


def save(fig, name):
    path = OUT / name
    fig.savefig(path, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    print(f"wrote {path.relative_to(ROOT)}")


def prefill_chart(run_a):
    ours, torch = criterion_rows(run_a), torch_rows(run_a)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    top = 0.0
    for ax, d in zip(axes, (64, 128)):
        shown = set()
        for causal, style in ((False, "-"), (True, "--")):
            pts = sorted(
                (shape, ours[(shape, causal)], torch[("prefill", shape, "causal" if causal else "none")])
                for (shape, c) in ours
                if c == causal and shape[5] == d and shape[3] > 1
                and ("prefill", shape, "causal" if causal else "none") in torch
            )
            if not pts:
                continue
            seq = [s[3] for s, _, _ in pts]
            f = [flops(s, causal) for s, _, _ in pts]
            tag = "causal" if causal else "no mask"
            for label, us in (("ours", [o for _, o, _ in pts]), ("FA2", [t[0] for _, _, t in pts]),
                              ("cuDNN", [t[1] for _, _, t in pts])):
                tfs = [fl / (u * 1e-6) / 1e12 for fl, u in zip(f, us)]
                top = max(top, *tfs)
                ax.plot(seq, tfs, style, marker="o", color=COLORS[label], label=f"{label}, {tag}")
            for s, _, _ in pts:
                if s[3] not in shown:
                    shown.add(s[3])
                    ax.annotate(f"batch {s[0]}, {s[1]} heads", (s[3], 8), fontsize=6, ha="center", color="#555")
        ax.set_xscale("log", base=2)
        ax.set_title(f"head dim {d}")
        ax.set_xlabel("sequence length (Sq = Sk)")
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, top * 1.08)
    axes[0].set_ylabel("TF/s (attention FLOPs, causal halved)")
    axes[1].legend(fontsize=6, loc="lower right", ncol=2)
    fig.suptitle("Prefill, bf16, NVIDIA H100 80GB HBM3: ours vs PyTorch 2.11 SDPA (FA2, cuDNN), same device run",
                 fontsize=9)
    fig.text(0.01, -0.04, f"Source: {H100_RUNS.relative_to(ROOT)}, run A (ours: criterion medians, L2 flushed, CUDA events; torch: "
             "do_bench medians, L2 flushed). Points are the benchmark shapes measured, not a sweep.", fontsize=7)
    save(fig, "gpu-prefill.svg")


def decode_chart(run_b):
    ours, torch = criterion_rows(run_b), torch_rows(run_b)
    shapes = [s for (s, c) in ours if not c and ("decode", s, "none") in torch]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    width = 0.27
    for i, s in enumerate(shapes):
        fa2, cudnn = torch[("decode", s, "none")]
        for j, (label, us) in enumerate((("ours", ours[(s, False)]), ("FA2", fa2), ("cuDNN", cudnn))):
            gbs = kv_bytes(s) / (us * 1e-6) / 1e9
            ax.bar(i + (j - 1) * width, gbs, width, color=COLORS[label], label=label if i == 0 else None)
            ax.text(i + (j - 1) * width, gbs + 20, f"{gbs:.0f}", ha="center", fontsize=6)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([f"B{s[0]} H{s[1]}/{s[2]}\nSq {s[3]}, Sk {s[4]}, d {s[5]}" for s in shapes], fontsize=7)
    ax.set_ylabel("K+V read, GB/s")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Decode (KV-cache step), bf16, NVIDIA H100 80GB HBM3, no mask, GQA", fontsize=9)
    fig.text(0.01, -0.1, f"Source: {H100_RUNS.relative_to(ROOT)}, run B (ours: criterion medians, L2 flushed, CUDA events; torch: do_bench medians, L2 flushed). "
             "GB/s = bytes of K and V / time.", fontsize=7)
    save(fig, "gpu-decode.svg")


def cpu_chart():
    rows = {}
    for line in CPU_CRITERION.read_text().split("# run 2")[0].splitlines():
        m = re.match(r"cpu_(fused_attn|naive)_(f32|bf16)/b(\d+)_h(\d+)_kv(\d+)_q(\d+)_k(\d+)_d(\d+)(_causal)? ([\d.]+)", line)
        if m:
            shape = tuple(int(m.group(i)) for i in range(3, 9))
            rows[(m.group(1), m.group(2), shape, bool(m.group(9)))] = float(m.group(10)) / 1000.0  # ms
    keys = sorted({(s, c) for (_, _, s, c) in rows}, key=lambda k: (k[0][3] == 1, k[0][3], k[1]))
    fig, ax = plt.subplots(figsize=(9, 3.4))
    width = 0.2
    bars = (("fused_attn", "f32", "ours f32", "#d62728"), ("naive", "f32", "naive f32", "#bcbd22"),
            ("fused_attn", "bf16", "ours bf16", "#ff9896"), ("naive", "bf16", "naive bf16", "#dbdb8d"))
    for i, (s, c) in enumerate(keys):
        for j, (impl, dt, label, color) in enumerate(bars):
            ms = rows[(impl, dt, s, c)]
            ax.bar(i + (j - 1.5) * width, ms, width, color=color, label=label if i == 0 else None)
    ax.set_yscale("log")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"B{s[0]} H{s[1]}/{s[2]} Sq {s[3]} Sk {s[4]} d {s[5]}{' causal' if c else ''}"
                        for s, c in keys], fontsize=6)
    ax.set_ylabel("time per call, ms (log)")
    ax.legend(fontsize=7, ncol=4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("CPU, 2-core AMD EPYC Zen 3 (AVX2): fused op vs candle's naive attention", fontsize=9)
    fig.text(0.01, -0.1, f"Source: {CPU_CRITERION.relative_to(ROOT)}, run 1 (criterion medians, 2 rayon threads). "
             "Against PyTorch's CPU SDPA on newer CPUs: cpu-torch.svg.", fontsize=7)
    save(fig, "cpu.svg")


def table_rows(run):
    """A table call's rows: [(kind, shape, mask, ours µs, FA2 µs run 1, cuDNN µs run 1, run 2)].

    Runs table.py (the script that builds the README's H100 table) on RUN, its printed table
    discarded, and takes its dicts: `ours` from medians.txt, `t1` / `t2` from
    torch{1,2}/bench_torch.md and decode/bench_torch.md. Rows are t1's in file order, those with
    a criterion median, as table.py prints them.
    """
    argv = sys.argv
    sys.argv = [str(TABLE_PY), str(run)]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            g = runpy.run_path(str(TABLE_PY), run_name="table")
    finally:
        sys.argv = argv
    ours, t1, t2 = g["ours"], g["t1"], g["t2"]
    return [(kind, key[0], key[1], ours[key], fa, cu, t2[key][2])
            for key, (kind, fa, cu) in t1.items() if key in ours]


def pooled_rows(run, n):
    """pooled.py's rows of a call of N interleaved runs: {key: (kind, ours, cuDNN, FA2, ratio, min, max)}."""
    g = runpy.run_path(str(POOLED_PY), run_name="pooled")
    return g["pooled"](str(run), n)


def seq(s, sep=" "):
    """'2048' when Sq = Sk, else 'q1 k8192'."""
    return str(s[3]) if s[3] == s[4] else f"q{s[3]}{sep}k{s[4]}"


def gpu_bars(bars_of, rows, legend_panel=0):
    """Two panels (prefill, decode) of grouped bars. ROWS: [(kind, shape, mask, ours µs, ...)];
    BARS_OF(row) -> [(label, ratio, low, high or None, hatch, color)]."""
    panels = [[r for r in rows if r[0] == "prefill"], [r for r in rows if r[0] == "decode"]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.0), gridspec_kw={"width_ratios": [len(p) + 1 for p in panels]})
    width = 0.27
    for ax, pts in zip(axes, panels):
        top = min(2.6, max(b[1] for row in pts for b in bars_of(row))) * 1.15
        for i, row in enumerate(pts):
            bars = bars_of(row)
            for j, (label, r, lo, hi, hatch, color) in enumerate(bars):
                x = i + (j - (len(bars) - 1) / 2) * width
                ax.bar(x, r, width, color=color, hatch=hatch, edgecolor="white", linewidth=0,
                       label=label if i == 0 else None)
                if lo is not None:
                    ax.errorbar(x, r, yerr=[[max(r - lo, 0)], [max(min(hi, top) - r, 0)]], fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
                # Above the axis (the four-query decode's 4.5): the value written inside the bar's top.
                y, va = (max(r, hi or r) + 0.02, "bottom") if max(r, hi or r) < top * 0.9 else (top * 0.97, "top")
                ax.text(x, y, f"{r:.2f}" if label.startswith("FA2") else f"{r:.3f}",
                        ha="center", va=va, fontsize=5, rotation=90, color="black" if va == "bottom" else "white")
        ax.axhline(1.0, color=COLORS["ours"], linewidth=1, label="ours (= 1)")
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels([f"{s[0]},{s[1]},{s[2]}\n{seq(s)}\nd{s[5]}" + ("\ncausal" if mask == "causal" else "")
                            + f"\n{o:.1f} µs" for _, s, mask, o, *_ in pts], fontsize=5.5)
        ax.set_ylim(0, top)
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{pts[0][0]} ({len(pts)} rows; no mask unless causal)", fontsize=9)
    axes[0].set_ylabel("torch time / our time (> 1: ours faster)")
    axes[legend_panel].legend(fontsize=6, loc="upper left")
    return fig


def h200_chart():
    a, b = pooled_rows(H200_RUN, 3), pooled_rows(H200_RUN2, 3)
    rows = [(v[0], key[0], key[1], v[1], key) for key, v in a.items()]
    gpu = (H200_RUN / "gpu0.txt").read_text().splitlines()[1]  # "NVIDIA H200, 580.159.04, 1980 MHz"

    def bars(row):
        key = row[4]
        _, o, cu, fa, r, lo, hi = a[key]
        r2, lo2, hi2 = b[key][4:]
        return [("FA2 (median of 4 runs)", fa / o, None, None, None, COLORS["FA2"]),
                ("cuDNN, call 1 (median of 4; bar: the 6 per-table ratios)", r, lo, hi, None, COLORS["cuDNN"]),
                ("cuDNN, call 4 on another H200", r2, lo2, hi2, "////", "#c7c7c7")]
    fig = gpu_bars(bars, rows)
    fig.suptitle(f"{gpu.split(',')[0]} (driver {gpu.split(',')[1].strip()}), bf16, 2026-12-03, session 58 calls 1 and 4: "
                 "ours vs PyTorch 2.11 SDPA (FA2, cuDNN), pooled over interleaved runs", fontsize=9)
    fig.text(0.01, -0.16, f"Source: {H200_RUN.relative_to(ROOT)}/ and {H200_RUN2.relative_to(ROOT)}/ via "
             f"{POOLED_PY.relative_to(ROOT)} (the README's table). Each call: torch warm-up (discarded), then torch 1,\n"
             "ours 1, torch 2, ours 2, torch 3, ours 3, torch 4. Ratio: median of cuDNN's 4 runs / median of our 3 "
             "(criterion medians; torch: do_bench medians; L2 flushed per rep). Error bars: the\n6 single-table ratios "
             "(ours k against torch k and k+1). Tick labels: B,H,Hkv / Sq=Sk or Sq,Sk / head dim, our time in call 1.", fontsize=7)
    save(fig, "gpu-h200.svg")


def h100_chart():
    rows = table_rows(H100_RUN)
    gpu = (H100_RUN / "gpu0.txt").read_text().splitlines()[1]

    def bars(row):
        _, _, _, o, fa, cu1, cu2 = row
        return [("FA2 (run 1)", fa / o, None, None, None, COLORS["FA2"]),
                ("cuDNN run 1", cu1 / o, None, None, None, COLORS["cuDNN"]),
                ("cuDNN run 2", cu2 / o, None, None, "////", "#c7c7c7")]
    fig = gpu_bars(bars, rows)
    fig.suptitle(f"{gpu.split(',')[0]} (driver {gpu.split(',')[1].strip()}), bf16, 2026-12-02, session 57 call 1: "
                 "ours vs PyTorch 2.11 SDPA (FA2, cuDNN), one device call", fontsize=9)
    fig.text(0.01, -0.16, f"Source: {H100_RUN.relative_to(ROOT)}/ via {TABLE_PY.relative_to(ROOT)} (the README's H100 table). "
             "Order in the call: torch run 1, ours, torch run 2. Ours: criterion medians; torch: do_bench medians;\nL2 "
             "flushed per rep on both. Bars: FA2 run 1, cuDNN run 1 and run 2 shown separately (not averaged). "
             "Tick labels: B,H,Hkv / Sq=Sk or Sq,Sk / head dim, our time.", fontsize=7)
    save(fig, "gpu-h100.svg")


def ratio(x):
    """As the README writes torch / ours: 1.22, 24.7."""
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×"


def cpu_torch_chart():
    panels = []
    for title, path in CPU_TORCH:
        data = json.loads(path.read_text())
        panels.append((title, data["meta"], data["results"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.8), sharey=True)
    for ax, (title, meta, res) in zip(axes, panels):
        for i, r in enumerate(res):
            o, t = r["ours_ms"], r["torch_ms"]
            ax.bar(i - 0.2, o, 0.4, color=COLORS["ours"], label="ours" if i == 0 else None)
            ax.bar(i + 0.2, t, 0.4, color=COLORS["torch"], label="torch SDPA" if i == 0 else None)
            ax.text(i, max(o, t) * 1.12, ratio(r["speed_vs_torch"]), ha="center", fontsize=5.5)
        ax.set_yscale("log")
        ax.set_xticks(range(len(res)))
        ax.set_xticklabels([f"{r['row'][0]},{r['row'][1]},{r['row'][2]}\n{seq(r['row'], chr(10))}\nd{r['row'][5]}"
                            + ("\ncausal" if r["causal"] else "") + f"\n{r['dtype']}" for r in res], fontsize=5)
        ax.set_title(f"{title}\ncores {','.join(map(str, meta['cpus_allowed']))}, {meta['when'][:10]}", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylim(top=max(r["torch_ms"] for *_, res in panels for r in res) * 6)
    axes[0].set_ylabel("time per call, ms (log)")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle("CPU, 2 threads on 2 cores: ours vs PyTorch 2.11 CPU SDPA, alternating in one run "
                 "(torch / ours above each pair)", fontsize=9, y=1.04)
    fig.text(0.01, -0.1, "Sources: " + ", ".join(str(p.relative_to(ROOT)) for _, p in CPU_TORCH)
             + " (scripts/bench_torch_cpu.py,\nmedians of 3 rounds). Sapphire Rapids: the H200 machine's host, "
             "a KVM guest; no AMX: the OS refuses the AMX tile state to both sides (scripts/no_amx.py).", fontsize=7)
    save(fig, "cpu-torch.svg")


def llama_rows(text):
    """{(model, prompt): (prefill fused, naive, decode fused, naive)} tok/s from the llama runs."""
    rows, key = {}, None
    for line in text.splitlines():
        if line.startswith("$ ") and "llama" in line and "--prompt-len" in line:
            prompt = int(re.search(r"--prompt-len (\d+)", line).group(1))
            syn = re.search(r"--synthetic (\S+)", line)
            model = f"{syn.group(1)} (synthetic)" if syn else "SmolLM2-135M"
            key, vals = (model, prompt), {}
            continue
        m = re.match(r"\| (fused|naive) \| [\d.]+ \| ([\d.]+) \| \d+ \| [\d.]+ \| ([\d.]+) \|", line)
        if m and key:
            vals[m.group(1)] = (float(m.group(2)), float(m.group(3)))
            if len(vals) == 2:
                rows[key] = (vals["fused"][0], vals["naive"][0], vals["fused"][1], vals["naive"][1])
    return rows


def llama_chart():
    text = H100_LLAMA.read_text()
    gpu = {}
    for run in sections(text, "Run 14") + sections(text, "Run 15"):
        gpu.update(llama_rows(run))
    series = [(m, p, v) for (m, p), v in sorted(gpu.items()) if m in ("SmolLM2-135M", "llama3-8b (synthetic)")]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 3, 1.4]})
    for ax, idx, what in ((axes[0], (0, 1), "prefill"), (axes[1], (2, 3), "decode")):
        labels = []
        for i, (m, p, v) in enumerate(series):
            ax.bar(i - 0.2, v[idx[0]], 0.4, color=COLORS["ours"], label="fused" if i == 0 else None)
            ax.bar(i + 0.2, v[idx[1]], 0.4, color=COLORS["naive"], label="naive" if i == 0 else None)
            ax.text(i, max(v[idx[0]], v[idx[1]]) * 1.05, f"{v[idx[0]] / v[idx[1]]:.2f}×", ha="center", fontsize=6)
            labels.append(("SmolLM2\n" if m.startswith("SmolLM2") else "Llama-3-8B\nrandom w.\n") + f"ctx {p}")
        ax.set_xticks(range(len(series)))
        ax.set_xticklabels(labels, fontsize=6)
        ax.set_ylabel(f"{what} tokens/s")
        if what == "prefill":
            ax.set_yscale("log")
        ax.set_title(f"H100, bf16: {what}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[2]
    for i, (p, pf, pn, df, dn) in enumerate(CPU_LLAMA):
        ax.bar(i - 0.2, df, 0.4, color=COLORS["ours"])
        ax.bar(i + 0.2, dn, 0.4, color=COLORS["naive"])
        ax.text(i, df * 1.05, f"{df / dn:.2f}×", ha="center", fontsize=6)
    ax.set_xticks(range(len(CPU_LLAMA)))
    ax.set_xticklabels([f"{p} prompt" for p, *_ in CPU_LLAMA], fontsize=6)
    ax.set_ylabel("decode tokens/s")
    ax.set_title("CPU, f32: decode", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle("examples/llama.rs --compare: fused vs naive attention (ratio above each pair)", fontsize=9)
    fig.text(0.01, -0.08, f"Sources: {H100_LLAMA.relative_to(ROOT)} runs 14 (llama3-8b, random weights) and 15 "
             "(SmolLM2-135M-Instruct GGUF), medians of 3; 16384 prefills in 4096-token chunks. CPU: the README's "
             "table (2-core machine, SmolLM2 f32, medians of 3).", fontsize=7)
    save(fig, "llama-tokens.svg")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    text = H100_RUNS.read_text()
    run_a = sections(text, "Run A")
    run_b = sections(text, "Run B")
    if len(run_a) != 1 or len(run_b) != 1:
        sys.exit(f"{H100_RUNS}: expected one 'Run A' and one 'Run B' section")
    prefill_chart(run_a[0])
    decode_chart(run_b[0])
    h200_chart()
    h100_chart()
    cpu_chart()
    cpu_torch_chart()
    llama_chart()


if __name__ == "__main__":
    main()
