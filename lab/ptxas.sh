#!/usr/bin/env bash
# Registers and spills of a kernel file's instances, as the driver's JIT sees them: the
# crate's generated unit (build.rs --codegen) → compute_80 PTX → ptxas -arch=sm_90 -v.
#
#   eval "$(scripts/cuda-toolkit.sh)"; lab/ptxas.sh decode_sm80 [grep-pattern]
#   PTXAS_ARCH=sm_80 lab/ptxas.sh bwd_sm80          # another SASS target (default sm_90)
#
# Prints one line per entry point: name, registers, stack, spill stores/loads (bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
FILE="${1:?kernel file stem, e.g. decode_sm80}"
PAT="${2:-.}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
rustc --edition 2021 -O build.rs -o "$TMP/codegen" 2>/dev/null
"$TMP/codegen" --codegen "$TMP/gen"
nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch=compute_80 -ptx -I kernels -I "$TMP/gen" \
  "$TMP/gen/$FILE.gen.cu" -o "$TMP/k.ptx"
ptxas -arch="${PTXAS_ARCH:-sm_90}" -v "$TMP/k.ptx" -o "$TMP/k.cubin" 2>&1 | awk '
  /Compiling entry function/ { gsub(/\x27/, "", $7); name = $7 }
  /bytes stack frame/ { stack = $1; st = $5; ld = $9 }
  /Used [0-9]+ registers/ { if (name != "") printf "%-44s %3s regs  stack %4s  spill %s/%s\n", name, $5, stack, st, ld; name = "" }
' | grep -E "$PAT"
