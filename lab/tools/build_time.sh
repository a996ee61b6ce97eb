#!/usr/bin/env bash
# Issue 14's build-time bar outside cargo: build.rs's two nvcc steps per kernel file (front end
# to PTX, then ptxas per cubin + fatbinary), one file per lane, LANES lanes, the files in
# build.rs's LONGEST_FIRST order, on the generated units of `build.rs --codegen`. Prints each
# file's front-end and back-end seconds (wall) and the whole run's wall and CPU seconds (of
# the children). It runs wherever nvcc does, so the device machine's host CPU (no Rust there)
# can time the same units as this VM:
#   lab/tools/build_time.sh GEN_DIR [LANES]          # GEN_DIR: the codegen's output (made when absent)
#   taskset -c 0,1 lab/tools/build_time.sh lab/bin/gen 2   # two cores of a bigger host
# Flags as build.rs passes them (sm_80 + sm_90 cubins and compute_80 PTX for the *_sm80 files,
# sm_90a for the *_sm90 ones; --threads=1, build.rs's default on 2 CPUs; the default `fast`
# compression's arguments read from build.rs's `fatbinary_args`). Outputs go to a temporary
# directory, removed at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"; cd "$ROOT"
GEN="${1:?GEN_DIR}"; LANES="${2:-2}"
if [ ! -f "$GEN/fwd_sm80.gen.cu" ]; then
  rustc --edition 2021 -O build.rs -o /tmp/fattn-codegen 2>/dev/null
  /tmp/fattn-codegen --codegen "$GEN" >/dev/null
fi
command -v nvcc >/dev/null || { export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"; eval "$(scripts/cuda-toolkit.sh)"; }
FATBIN_ARGS="$(grep -oP 'Compression::Fast => &\[\K[^]]*' build.rs | tr -d '",')"
ORDER="bwd_sm80 fwd_sm80 decode_sm80 fwd_sm90 bwd_sm90 decode_sm90"
OUTD="$(mktemp -d)"; trap 'rm -rf "$OUTD"' EXIT
one() {
  local f=$1 va codes t0 t1 t2
  case $f in *_sm90) va=compute_90a codes=sm_90a ;; *) va=compute_80 codes=sm_80,sm_90,compute_80 ;; esac
  t0=$(date +%s.%N)
  # nvcc's diagnostics (ptxas's C7519 notes on the sm_90a files) only when a step fails, as cargo
  # shows a build script's output.
  nvcc --ptx -arch=$va -O3 -std=c++17 --expt-relaxed-constexpr -I kernels -I "$GEN" "$GEN/$f.gen.cu" \
    -o "$OUTD/$f.ptx" > "$OUTD/$f.front.log" 2>&1 || { cat "$OUTD/$f.front.log"; echo "$f: front end failed"; exit 1; }
  t1=$(date +%s.%N)
  # shellcheck disable=SC2086
  nvcc -fatbin "-gencode=arch=$va,code=[$codes]" --threads=1 $FATBIN_ARGS "$OUTD/$f.ptx" -o "$OUTD/$f.fatbin" \
    > "$OUTD/$f.back.log" 2>&1 || { cat "$OUTD/$f.back.log"; echo "$f: ptxas/fatbinary failed"; exit 1; }
  t2=$(date +%s.%N)
  awk -v f="$f" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%-12s front %6.1f s  back %6.1f s  total %6.1f s\n", f, b - a, c - b, c - a }'
}
export -f one; export GEN OUTD FATBIN_ARGS
echo "nvcc: $(nvcc --version | tail -2 | head -1); lanes $LANES; CPUs allowed: $(nproc)"
# bash's `time` counts the CPU of every child it waited for (nvcc, cicc, ptxas, fatbinary).
TIMEFORMAT="all files: %R s wall, %U s user + %S s system CPU"
time (printf '%s\n' $ORDER | xargs -P "$LANES" -I{} bash -c 'one {}')
