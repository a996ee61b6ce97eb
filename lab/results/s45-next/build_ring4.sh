#!/usr/bin/env bash
# Session 45's second stamps pack: session 44's 4-stage ring (lab/results/s44-call2/ring4.diff,
# applied in a scratch worktree of HEAD) with the same FATTN_LAB_DECODE_STAMPS=5 stamps, so that
# call.sh can stamp the 2048 decode on the 4-stage ring (its default there) and on the
# 3-stage one (FUSED_ATTN_DECODE_STAGES=3) and find the phase the 4-stage ring doubled
# (session 44 call 3: 16.96 against 9.65 µs in ncu). device-pack/h90-s45r4-9.tar.xz.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
ROOT="$PWD"; WT="$(mktemp -d)/wt"
git worktree add -q "$WT" HEAD
trap 'git -C "$ROOT" worktree remove --force "$WT"' EXIT
git -C "$WT" apply --3way "$ROOT/lab/results/s44-call2/ring4.diff"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="$FUSED_ATTN_CACHE/target-cuda-wt" FUSED_ATTN_CUDA_ARCHS=90  # not target-cuda: a worktree build there taints main's next build (lab/README.md, session 45)
export FUSED_ATTN_FATBIN_COMPRESSION=fast
(cd "$WT" && NVCC_FLAGS=-DFATTN_LAB_DECODE_STAMPS=5 cargo build --release --features cuda --example lab_decode_stamps)
S="$(mktemp -d)"; mkdir -p "$S/bin"
strip -o "$S/bin/lab_decode_stamps" "$CARGO_TARGET_DIR/release/examples/lab_decode_stamps"
echo "$(git rev-parse --short HEAD) + lab/results/s44-call2/ring4.diff" > "$S/COMMIT"
mkdir -p device-pack; XZ_OPT="-6 -T0" tar -cJf device-pack/h90-s45r4-9.tar.xz -C "$S" .; rm -rf "$S"
ls -la device-pack/h90-s45r4-9.tar.xz
