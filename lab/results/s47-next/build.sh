#!/usr/bin/env bash
# Session 47's first pack (prepared at the end of session 46): lab stamps of the Hopper prefill
# with the phases of item 5 (a steady tile, not the CTA's first) and the epilogue's sub-phases
# (kernels/fwd_sm90.cu FATTN_LAB_PHASE_ITEM, phases 12-15; examples/lab_stamps.rs prints them):
# device-pack/lab_stamps.xz. The default build's PTX is unchanged by the stamps.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="$FUSED_ATTN_CACHE/target-cuda" FUSED_ATTN_CUDA_ARCHS=90 FUSED_ATTN_FATBIN_COMPRESSION=fast
NVCC_FLAGS="-DFATTN_LAB_STAMPS=5 -DFATTN_LAB_PHASE_ITEM=5" cargo build --release --features cuda --example lab_stamps
strip -o /tmp/lab_stamps "$CARGO_TARGET_DIR/release/examples/lab_stamps"
mkdir -p device-pack && xz -T0 -6 -c /tmp/lab_stamps > device-pack/lab_stamps.xz
ls -la device-pack/lab_stamps.xz
