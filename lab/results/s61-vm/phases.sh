#!/usr/bin/env bash
# per-file phase CPU times: cicc (to PTX) and ptxas per cubin, serial
set -euo pipefail
cd /work/main
export FUSED_ATTN_CACHE=$HOME/.cache/candle-fused-attn
eval "$(scripts/cuda-toolkit.sh)"
T=/work/bt/gen; mkdir -p $T
rustc --edition 2021 -O build.rs -o /work/bt/codegen 2>/dev/null
/work/bt/codegen --codegen $T/gen >/dev/null
for f in ${FILES:-bwd_sm80 fwd_sm80 decode_sm80 fwd_sm90 bwd_sm90 decode_sm90}; do
  case $f in *_sm90) va=compute_90a; cubs="sm_90a";; *) va=compute_80; cubs="sm_80 sm_90";; esac
  s=$( { /usr/bin/time -f %U+%S nvcc -ptx -arch=$va -O3 -std=c++17 --expt-relaxed-constexpr -I kernels -I $T/gen $T/gen/$f.gen.cu -o $T/$f.ptx ${EXTRA:-}; } 2>&1 | tail -1)
  line="$f cicc $(echo $s | bc)"
  for c in $cubs; do
    s=$( { /usr/bin/time -f %U+%S ptxas -arch=$c -O3 $T/$f.ptx -o $T/$f.$c.cubin; } 2>&1 | tail -1)
    line="$line ptxas-$c $(echo $s | bc)"
  done
  echo "$line"
done
