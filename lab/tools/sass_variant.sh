#!/usr/bin/env bash
# One Hopper forward instance's SASS from kernels/fwd_sm90.cu with a sed edit applied, in
# seconds and without a device: for lab/tools/sass_loops.py before an A/B. Needs a build's out
# dir (OUT: fattn_generated.cuh of the same params.cuh; `cargo build --features cuda --lib`
# with FUSED_ATTN_CUDA_ARCHS=90 makes one) and the entry line of the instance from that header.
#   OUT=.../out lab/tools/sass_variant.sh NAME 'FATTN_INSTANCE_FWD(BF16, fattn_fwd_bf16_d128_sm90, 128, 0, 384, 128, 128, 197736)' 'SED'
#   lab/tools/sass_loops.py /tmp/sass-variant-base/k.sass /tmp/sass-variant-NAME/k.sass
# Session 33: the d128 conditional rescale (kConditionalRescale true on HopperTraits<128, 0>)
# keeps the key loop on the uniform datapath (953 -> 969 SASS), so its session-31 loss is not
# the datapath effect that sank the second TMA store.
set -euo pipefail
name="$1" entry="$2" edit="${3:-}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${OUT:?OUT, the out dir of a cuda build (fattn_generated.cuh)}"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
NV="$FUSED_ATTN_CACHE/cuda-home/bin"
CU="$("$ROOT/lab/tools/cuobjdump.sh")/cuobjdump"
d="/tmp/sass-variant-$name"; rm -rf "$d"; mkdir -p "$d"
sed -e "${edit:-s/^x//}" "$ROOT/kernels/fwd_sm90.cu" > "$d/fwd_sm90.cu"
printf '#include "fwd_sm90.cu"\n#include "fattn_generated.cuh"\n%s\n' "$entry" > "$d/gen.cu"
"$NV/nvcc" --ptx -arch=compute_90a -O3 -std=c++17 --expt-relaxed-constexpr -I "$d" -I "$ROOT/kernels" -I "$OUT" \
  "$d/gen.cu" -o "$d/k.ptx"
"$NV/ptxas" -arch=sm_90a -v "$d/k.ptx" -o "$d/k.cubin" 2> "$d/ptxas.txt"
"$CU" -sass "$d/k.cubin" > "$d/k.sass"
grep -E "spill|registers" "$d/ptxas.txt" | head -4
echo "$d/k.sass"
