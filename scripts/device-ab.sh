#!/usr/bin/env bash
# Same-run A/B of two device packs on the GPU machine: every check of the new pack, then the
# criterion CUDA bench of both packs alternated (base, new, base, new) with PyTorch SDPA in
# the same run, so that a restructuring or a kernel change is judged against the previous
# binaries on the same card at the same time.
#
#   bash scripts/device-ab.sh BASE.tar.xz NEW.tar.xz OUT_DIR [STAGES for the new pack]
#
# OUT_DIR gets ab.md (the medians side by side), new.tar.xz (the new pack's device-run
# outputs: summary.md and every log) and base-bench.log/new-bench.log: few files, as the
# device tool brings back at most 8.
set -uo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
BASE="$1"
NEW="$2"
OUT="$3"
shift 3
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(tests oracle sanitize torch llama)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$OUT"
T="$(mktemp -d)"

# Every check of the new pack (the bench comes below, interleaved with the base pack).
DEVICE_RUN_WORK="$T/work-new" bash "$HERE/device-run.sh" "$NEW" "$T/new" "${STAGES[@]}"
rc=$?

# Criterion, alternated. device-run's bench stage also runs torch: only once, in round 1.
for round in 1 2; do
  for which in base new; do
    pack="$BASE"
    [ "$which" = new ] && pack="$NEW"
    stages=(bench)
    DEVICE_RUN_WORK="$T/work-$which" bash "$HERE/device-run.sh" "$pack" "$T/$which-$round" "${stages[@]}" \
      >/dev/null 2>&1
    cat "$T/$which-$round/bench.log" >>"$OUT/$which-bench.log"
  done
done

python3 - "$T" "$OUT/ab.md" <<'PY'
import pathlib, re, statistics, sys
t = pathlib.Path(sys.argv[1])
def medians(which):
    rows = {}
    for f in sorted(t.glob(f"{which}-*/bench.log")):
        on = False
        for line in f.read_text().splitlines():
            if line.startswith("criterion medians"):
                on = True
                continue
            if on:
                m = re.match(r"(\S+) ([0-9.]+)$", line)
                if m:
                    rows.setdefault(m.group(1), []).append(float(m.group(2)))
    return rows
base, new = medians("base"), medians("new")
lines = ["| bench | base µs (runs) | new µs (runs) | new / base |", "|---|---|---|---|"]
for k in sorted(set(base) | set(new)):
    b, n = base.get(k, []), new.get(k, [])
    bm = statistics.median(b) if b else float("nan")
    nm = statistics.median(n) if n else float("nan")
    fmt = lambda xs: " / ".join(f"{x:.1f}" for x in xs)
    lines.append(f"| {k} | {bm:.1f} ({fmt(b)}) | {nm:.1f} ({fmt(n)}) | {nm / bm:.3f} |")
pathlib.Path(sys.argv[2]).write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
for f in "$T"/new-1/bench_torch.md; do [ -f "$f" ] && cp "$f" "$OUT/bench_torch.md"; done
tar -cJf "$OUT/new.tar.xz" -C "$T" new
cat "$T/new/summary.md"
exit $rc
