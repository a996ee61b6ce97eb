#!/usr/bin/env bash
# Installs a CUDA 13.0 toolkit without root and without a GPU, from pinned PyPI wheels,
# and prints the environment that `cargo build --features cuda` needs.
#
#   eval "$(scripts/cuda-toolkit.sh)"      # install once (cached), then export
#
# Idempotent: a second run only prints the exports. The cache lives outside the work tree,
# in $FUSED_ATTN_CACHE (default ~/.cache/candle-fused-attn). Users with a system toolkit
# skip this and set CUDA_HOME / CUDA_PATH themselves.
#
# Why each piece:
# - nvidia-nvvm is pinned: unpinned it pulls 13.5, whose PTX the 13.0 driver rejects.
# - never `pip install --upgrade` into the same --target: it wipes the tree. We install
#   into a fresh folder and rename it into place when complete.
# - candle's `cuda` feature links libcuda, which no wheel ships: we build a link stub with
#   SONAME libcuda.so.1 from the names cuda.h declares; the real driver resolves them at
#   run time on a GPU machine.
set -euo pipefail

CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
WHEELS="$CACHE/cuda-13.0"
HOME_DIR="$CACHE/cuda-home"
PINS=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-crt==13.0.88
  nvidia-cuda-cccl==13.0.85
  nvidia-cuda-nvrtc==13.0.88
  nvidia-cublas==13.0.2.14
  nvidia-curand==10.4.0.35
)

mkdir -p "$CACHE"
if [ ! -x "$WHEELS/nvidia/cu13/bin/nvcc" ]; then
  echo "installing the CUDA 13.0 wheels into $WHEELS" >&2
  rm -rf "$WHEELS.partial"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$WHEELS.partial" "${PINS[@]}" >&2
  rm -rf "$WHEELS"
  mv "$WHEELS.partial" "$WHEELS"
fi
CU="$WHEELS/nvidia/cu13"

if [ ! -e "$HOME_DIR/lib64/libcuda.so" ]; then
  echo "linking the CUDA home in $HOME_DIR" >&2
  rm -rf "$HOME_DIR"
  mkdir -p "$HOME_DIR/lib64"
  ln -s "$CU/bin" "$HOME_DIR/bin"
  ln -s "$CU/include" "$HOME_DIR/include"
  ln -s "$CU/nvvm" "$HOME_DIR/nvvm"
  ln -s libcuda.so.1 "$HOME_DIR/lib64/libcuda.so"
  for lib in libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13 libcudart.so.13; do
    ln -s "$CU/lib/$lib" "$HOME_DIR/lib64/$lib"
    ln -s "$CU/lib/$lib" "$HOME_DIR/lib64/${lib%%.so*}.so"
  done
  ln -s "$CU/lib/libcudart_static.a" "$HOME_DIR/lib64/libcudart_static.a"
  ln -s "$CU/lib/libcudadevrt.a" "$HOME_DIR/lib64/libcudadevrt.a"
fi

# The stub: every cu* function cuda.h declares (versioned aliases included) returns
# CUDA_ERROR_NO_DEVICE (100), so a CUDA binary run on a machine without a driver (with
# this folder on LD_LIBRARY_PATH) fails cleanly at cuInit and its tests print SKIPPED.
# Built to a temporary name and moved into place: builds may be linking against it.
STUB_MARK="$HOME_DIR/lib64/.stub-no-device"
if [ ! -e "$STUB_MARK" ]; then
  echo "building the libcuda link stub in $HOME_DIR" >&2
  gcc -E -P -I"$CU/include" "$CU/include/cuda.h" \
    | grep -oE '\bcu[A-Za-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u \
    | awk '{ print "int " $1 "(void) { return 100; }" }' > "$HOME_DIR/libcuda_stub.c"
  gcc -shared -fPIC -w -Wl,-soname,libcuda.so.1 -o "$HOME_DIR/lib64/libcuda.so.1.tmp" "$HOME_DIR/libcuda_stub.c"
  mv -f "$HOME_DIR/lib64/libcuda.so.1.tmp" "$HOME_DIR/lib64/libcuda.so.1"
  touch "$STUB_MARK"
fi

# Exports for the caller's shell (eval them). CUDA_COMPUTE_CAP stands in for nvidia-smi;
# bindgen_cuda reads CUDA_PATH/CUDA_ROOT, cudarc reads CUDA_HOME, nvcc comes from PATH.
cat <<EOF
export CUDA_HOME="$HOME_DIR"
export CUDA_PATH="$HOME_DIR"
export CUDA_ROOT="$HOME_DIR"
export PATH="$HOME_DIR/bin:\$PATH"
export LIBRARY_PATH="$HOME_DIR/lib64\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CUDA_COMPUTE_CAP="\${CUDA_COMPUTE_CAP:-90}"
export CUDAFORGE_THREADS="\${CUDAFORGE_THREADS:-2}"
EOF
