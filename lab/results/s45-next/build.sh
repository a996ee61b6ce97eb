#!/usr/bin/env bash
# Session 45's stamps pack (plan item 1 of session 44): the bench-shaped 2048 decode with
# %globaltimer stamps in the split kernel and the combine (kernels/decode_sm80.cu,
# kernels/decode_sm90.cu under FATTN_LAB_DECODE_STAMPS=5), examples/lab_decode_stamps.rs as
# bin/lab_decode_stamps: device-pack/h90-s45st-9.tar.xz. The default build's PTX is
# unchanged by the stamps (checked at the end of session 44: the same PTX but comments).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="$FUSED_ATTN_CACHE/target-cuda" FUSED_ATTN_CUDA_ARCHS=90 FUSED_ATTN_FATBIN_COMPRESSION=fast
NVCC_FLAGS=-DFATTN_LAB_DECODE_STAMPS=5 cargo build --release --features cuda --example lab_decode_stamps
S="$(mktemp -d)"; mkdir -p "$S/bin"
strip -o "$S/bin/lab_decode_stamps" "$CARGO_TARGET_DIR/release/examples/lab_decode_stamps"
git rev-parse --short HEAD > "$S/COMMIT"
mkdir -p device-pack; XZ_OPT="-6 -T0" tar -cJf device-pack/h90-s45st-9.tar.xz -C "$S" .; rm -rf "$S"
ls -la device-pack/h90-s45st-9.tar.xz
