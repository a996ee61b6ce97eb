#!/usr/bin/env bash
# per-entry ptxas CPU time: entries.sh FILE ARCH
set -uo pipefail
cd /work/main
export FUSED_ATTN_CACHE=$HOME/.cache/candle-fused-attn
eval "$(scripts/cuda-toolkit.sh)"
f=$1; a=$2; P=/work/bt/gen/$f.ptx
for e in $(grep -oP '^\.visible \.entry \K[A-Za-z0-9_]+' $P); do
  s=$( { /usr/bin/time -f %U+%S ptxas -arch=$a -O3 -e $e $P -o /tmp/e.$$.cubin; } 2>&1 | tail -1)
  echo "$e $(echo $s | bc)"
done
