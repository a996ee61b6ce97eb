#!/usr/bin/env bash
# cuobjdump and nvdisasm from NVIDIA's PyPI wheels (the pinned toolkit of scripts/cuda-toolkit.sh
# has neither), unpacked once under $FUSED_ATTN_CACHE/tools; prints the bin directory.
#   CU="$(lab/tools/cuobjdump.sh)/cuobjdump"; "$CU" -sass -fun NAME file.cubin
set -euo pipefail
T="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}/tools"
if [ ! -x "$T/nvidia/cu13/bin/cuobjdump" ]; then
  mkdir -p "$T"
  python3 -m pip download -q --no-deps -d "$T/whl" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2
  for w in "$T"/whl/*.whl; do python3 -m zipfile -e "$w" "$T"; done
  chmod +x "$T"/nvidia/cu13/bin/*
fi
echo "$T/nvidia/cu13/bin"
