#!/usr/bin/env bash
# Builds the CPU bench and the CPU test binary here (no CUDA needed) and packs them, stripped,
# with the scripts that run them, for a machine without Rust (the GPU machine's host CPU,
# for issue 15's rows): device-pack/fused-attn-cpu.tar.xz.
#
#   scripts/cpu-pack.sh
#   # on the other machine (device tool `run`, the pack carried):
#   bash scripts/cpu-run.sh device-pack/fused-attn-cpu.tar.xz $OUT [bench] [tests] [cores]
#
# Environment: CARGO_TARGET_DIR (default ~/.cache/candle-fused-attn/target).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}/target}"
PACK_DIR="$ROOT/device-pack"
PACK="$PACK_DIR/fused-attn-cpu.tar.xz"
STAGE="$PACK_DIR/cpu-stage"
artifacts="$(cargo build --release --example bench_cpu --test cpu --message-format=json-render-diagnostics \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null)
           | "\(.target.kind[0]) \(.target.name) \(.executable)"')"
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/scripts"
while read -r kind name exe; do
  case "$kind/$name" in
    example/bench_cpu) dest=bench_cpu ;;
    test/cpu) dest=cpu ;;
    *) continue ;;
  esac
  strip -o "$STAGE/bin/$dest" "$exe"
  echo "cpu-pack: bin/$dest <- $exe" >&2
done <<<"$artifacts"
cp scripts/bench_torch_cpu.py scripts/cpu-run.sh scripts/no_amx.py "$STAGE/scripts/"
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src tests examples || echo '+dirty')" >"$STAGE/PACK_INFO"
rm -f "$PACK"
XZ_OPT="-2 -T0" tar -cJf "$PACK" -C "$STAGE" .
rm -rf "$STAGE"
echo "cpu-pack: $PACK ($(du -h "$PACK" | cut -f1))" >&2
