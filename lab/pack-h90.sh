#!/usr/bin/env bash
# The lab's quick GPU pack: the GPU test binary and the bench binary only, sm_90 cubins only
# (FUSED_ATTN_CUDA_ARCHS=90), fast fatbin compression, stripped, with the device scripts; xz -9,
# whose 64 MiB dictionary finds the binaries' shared kernel images (14 MB against 43 at -2):
# device-pack/h90.tar.xz (about 14 MB; carry it to the device tool). scripts/device-pack.sh
# is the full pack (examples too, every arch). PACK_HUNT=1: the panic hunt's test binary
# (tests/panic_hunt.rs, for PANIC_HUNT_DEVICE=cuda; lab/results/s41-next/call.sh) instead of
# the GPU tests and the bench, as bin/panic_hunt. PACK_COLDSTART=1: also the coldstart example
# (bin/coldstart, for device-run.sh's `coldstart` stage; its sm_90 cubins are what a release
# build ships for the H200, with fast rather than default fatbin compression).
#   lab/pack-h90.sh [TAG]   # TAG: the pack is device-pack/h90[-TAG].tar.xz
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$ROOT"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$FUSED_ATTN_CACHE/target-cuda}"
export FUSED_ATTN_CUDA_ARCHS=90 FUSED_ATTN_FATBIN_COMPRESSION=fast
targets=(--test gpu --bench attention)
[ "${PACK_HUNT:-0}" = 1 ] && targets=(--test panic_hunt)
[ "${PACK_COLDSTART:-0}" = 1 ] && targets+=(--example coldstart)
art="$(nice cargo build --release --features cuda "${targets[@]}" --message-format=json-render-diagnostics \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null) | "\(.target.kind[0]) \(.target.name) \(.executable)"')"
S="$(mktemp -d)"; mkdir -p "$S/bin" "$S/scripts"
while read -r kind name exe; do
  case "$kind" in test | example) strip -o "$S/bin/$name" "$exe" ;; bench) strip -o "$S/bin/bench" "$exe" ;; esac
done <<<"$art"
cp scripts/device-run.sh scripts/torch_oracle.py scripts/bench_torch*.py "$S/scripts/"
git rev-parse --short HEAD > "$S/COMMIT"; git status --short >> "$S/COMMIT"
mkdir -p device-pack
P="device-pack/h90${1:+-$1}.tar.xz"
XZ_OPT="-9 -T0" tar -cJf "$P" -C "$S" .
rm -rf "$S"; ls -la "$P"
