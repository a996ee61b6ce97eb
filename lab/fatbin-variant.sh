#!/usr/bin/env bash
# One kernel file's fatbin for the H200 machine (sm_90a for the *_sm90 files, sm_90 cubins of
# the compute_80 code for the *_sm80 ones), built from this checkout with extra nvcc flags, for
# FUSED_ATTN_LAB_KERNEL_IMAGES (src/cuda/lab_images.rs): a bench or test binary of the same
# source tree then loads it instead of its embedded image, so that one pack times several
# variants of a kernel file (~0.3 MB each for fwd_sm90, against ~15 MB for a bench pack).
#   lab/fatbin-variant.sh FILE OUT [NVCC FLAGS...]
#   lab/fatbin-variant.sh fwd_sm90 device-pack/fwd_sm90-poly4.fatbin -DFATTN_SM90_POLY_EXP_EVERY=4
# On the device: FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$PWD/device-pack/fwd_sm90-poly4.fatbin.
# The image must come from the same params structs and instance list as the binary (a kernel-
# only change, or the same commit): nothing checks that at load time beyond the entry names.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$ROOT"
file="$1" out="$2"; shift 2
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
eval "$(scripts/cuda-toolkit.sh)"
case "$file" in
  *_sm90) gencode="-gencode=arch=compute_90a,code=[sm_90a]" ;;
  *_sm80) gencode="-gencode=arch=compute_80,code=[sm_90]" ;;
  *) echo "fatbin-variant: $file: expected a kernel file's stem such as fwd_sm90" >&2; exit 2 ;;
esac
[ -f "kernels/$file.cu" ] || { echo "fatbin-variant: no kernels/$file.cu" >&2; exit 2; }
# The generated units and header of this checkout (build.rs's codegen).
(cd lab && rustc --edition 2021 -O ../build.rs -o /tmp/fattn-codegen 2>/dev/null && /tmp/fattn-codegen --codegen bin/gen >/dev/null)
mkdir -p "$(dirname "$out")"
nvcc -fatbin "$gencode" -O3 -std=c++17 --expt-relaxed-constexpr -Xfatbin=-compress-all \
  -I kernels -I lab/bin/gen "$@" "lab/bin/gen/$file.gen.cu" -o "$out"
ls -la "$out"
