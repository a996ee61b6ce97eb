#!/usr/bin/env bash
# Same-run A/B of two device packs' criterion benches on the GPU machine: the bench binaries
# of both packs alternated (base, new, base, new), then PyTorch SDPA (scripts/bench_torch.py)
# once, so that a restructuring or a kernel change is judged against the previous binaries on
# the same card at the same time.
#
#   BENCH_FILTER=cuda_fused_attn bash scripts/device-ab.sh BASE.tar.xz NEW.tar.xz OUT_DIR
#
# OUT_DIR gets ab.md (the criterion medians side by side, every run listed), bench.log (all
# criterion output) and bench_torch.md: few files, as the device tool brings back at most 8.
set -uo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
BASE="$1"
NEW="$2"
OUT="$3"
: "${BENCH_FILTER:=cuda_fused_attn}" "${ROUNDS:=2}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$OUT"
T="$(mktemp -d)"
for which in base new; do
  pack="$BASE"
  [ "$which" = new ] && pack="$NEW"
  mkdir -p "$T/$which"
  tar -xJf "$pack" -C "$T/$which" || { echo "cannot unpack $pack" >&2; exit 2; }
  echo "$which: $(tr '\n' ' ' <"$T/$which/PACK_INFO")" | tee -a "$OUT/bench.log"
done
# The runtime libraries, as device-run.sh finds them.
CU13_LIB="$(python3 -c 'import nvidia, os; print(next(os.path.join(p, "cu13", "lib") for p in nvidia.__path__ if os.path.isdir(os.path.join(p, "cu13", "lib"))))' 2>/dev/null)"
DRIVER_LIB="$(ldconfig -p | awk '/libcuda\.so\.1 / { print $NF; exit }' | xargs -r dirname)"
export LD_LIBRARY_PATH="${CU13_LIB}${DRIVER_LIB:+:$DRIVER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

for round in $(seq "$ROUNDS"); do
  for which in base new; do
    echo "=== round $round: $which" >>"$OUT/bench.log"
    CRITERION_HOME="$T/crit-$which-$round" timeout 280 "$T/$which/bin/bench" "$BENCH_FILTER" --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size "${BENCH_SAMPLES:-10}" --noplot >>"$OUT/bench.log" 2>&1
  done
done
PYTHONUNBUFFERED=1 timeout 200 python3 "$HERE/bench_torch.py" --out "$OUT" --rep-ms "${TORCH_REP_MS:-200}" \
  ${TORCH_ONLY:+--only "$TORCH_ONLY"} >>"$OUT/bench.log" 2>&1
rm -f "$OUT/bench_torch.json"

python3 - "$T" "$OUT/ab.md" <<'PY'
import json, pathlib, statistics, sys
t = pathlib.Path(sys.argv[1])
def medians(which):
    rows = {}
    for f in sorted(t.glob(f"crit-{which}-*/*/*/new/estimates.json")):
        key = f"{f.parts[-4]}/{f.parts[-3]}"
        rows.setdefault(key, []).append(json.loads(f.read_text())["median"]["point_estimate"] / 1e3)
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
cat "$OUT/bench_torch.md" 2>/dev/null
