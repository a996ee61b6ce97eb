#!/usr/bin/env bash
# The CUDA panic hunt's pack: tests/panic_hunt.rs built with the `cuda` feature (sm_90 cubins
# only, as lab/pack-h90.sh), stripped: device-pack/h90-TAG-9.tar.xz with bin/panic_hunt.
# On the device: PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 bin/panic_hunt panic_hunt
# --nocapture --test-threads=1 (lab/results/s41-next/call.sh).
#   lab/pack-hunt.sh TAG
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$ROOT"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$FUSED_ATTN_CACHE/target-cuda}"
export FUSED_ATTN_CUDA_ARCHS=90 FUSED_ATTN_FATBIN_COMPRESSION=fast
exe="$(nice cargo build --release --features cuda --test panic_hunt --message-format=json-render-diagnostics \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null) | .executable')"
S="$(mktemp -d)"; mkdir -p "$S/bin"
strip -o "$S/bin/panic_hunt" "$exe"
git rev-parse --short HEAD > "$S/COMMIT"; git status --short >> "$S/COMMIT"
mkdir -p device-pack
P="device-pack/h90-${1:?a tag}-9.tar.xz"
XZ_OPT="-2 -T0" tar -cJf "$P" -C "$S" .
rm -rf "$S"; ls -la "$P"
