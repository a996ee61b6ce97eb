#!/usr/bin/env bash
# Registers and spills of kernels/bwd_sm80.cu's entry points as the driver's JIT sees them:
# the crate's generated unit (build.rs --codegen) → compute_80 PTX → ptxas -arch=ARCH -v.
#
#   eval "$(scripts/cuda-toolkit.sh)"; lab/bwd/regs.sh [sm_90|sm_80] [grep-pattern]
#
# One line per entry point: name, registers, stack frame, spill stores/loads (bytes).
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH="${1:-sm_90}"
PAT="${2:-.}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
rustc --edition 2021 -O build.rs -o "$TMP/codegen" 2>/dev/null
"$TMP/codegen" --codegen "$TMP/gen"
nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch=compute_80 -ptx -I kernels -I "$TMP/gen" \
  "$TMP/gen/bwd_sm80.gen.cu" -o "$TMP/k.ptx"
ptxas -arch="$ARCH" -v "$TMP/k.ptx" -o "$TMP/k.cubin" 2>&1 | awk '
  /Compiling entry function/ { n = $0; sub(/.*function \x27/, "", n); sub(/\x27.*/, "", n); name = n }
  /bytes stack frame/ { stack = $1; st = $5; ld = $9 }
  /Used [0-9]+ registers/ { if (name != "") printf "%-40s %3s regs  stack %4s  spill %s/%s\n", name, $5, stack, st, ld; name = "" }
' | grep -E "$PAT"
