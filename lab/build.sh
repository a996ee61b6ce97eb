#!/usr/bin/env bash
# Builds the labs here (no GPU needed) for sm_90, from the same generated units as the crate.
#
#   lab/build.sh [prefill] [decode] [stream]      (default: prefill)
#
# prefill: lab/bin/lab (+ lab/bin/lab.tar.xz for the device run, lab/run.sh)
# decode:  .decode-lab/libdecode_lab.so (lab/decode/decode_lab.py loads it)
# stream:  .decode-lab/libstream_lab.so (lab/stream/stream_lab.py loads it)
#
# Every lab includes the kernels through lab/bin/gen/<file>.gen.cu, which `build.rs --codegen`
# writes from src/cuda/instances.rs and src/cuda/params.rs exactly as the crate's build does:
# the entry points of every instance and the checks of the Rust-side tables.
# Needs rustc and nvcc (eval "$(scripts/cuda-toolkit.sh)" provides nvcc).
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(cd .. && pwd)"
mkdir -p bin "$ROOT/.decode-lab"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(prefill)

CODEGEN="$(mktemp -d)"
trap 'rm -rf "$CODEGEN"' EXIT
rustc --edition 2021 -O ../build.rs -o "$CODEGEN/fattn-codegen"
"$CODEGEN/fattn-codegen" --codegen bin/gen
NVCC_COMMON=(-std=c++17 -O3 --expt-relaxed-constexpr -gencode arch=compute_90,code=sm_90 -I ../kernels -I bin/gen)
# The pip toolkit of scripts/cuda-toolkit.sh keeps its libraries (and the libcuda stub) here.
LIBS=()
[ -n "${CUDA_HOME:-}" ] && LIBS=(-L"$CUDA_HOME/lib64")

for t in "${targets[@]}"; do
  case "$t" in
    prefill)
      # The baseline kernel for A/B rows in `lab bench` (LAB_VARIANTS=1): kernels/fwd_sm80.cu
      # at LAB_BASE (default HEAD, so that the rows compare the working tree with the last
      # commit), in namespace fattn_base, without its entry points. It shares the working
      # tree's kernels/common/ headers: LAB_BASE must have them (any commit since the
      # kernels/common/ layout).
      git show "${LAB_BASE:-HEAD}:kernels/fwd_sm80.cu" |
        sed -e '/^\/\/ ---- entry points/,$d' -e 's/^namespace fattn {/namespace fattn_base { using namespace fattn;/' \
          > bin/base_fwd.cu
      nvcc "${NVCC_COMMON[@]}" -Xptxas -warn-spills -o bin/lab lab.cu
      tar -cJf bin/lab.tar.xz -C bin lab
      ;;
    decode)
      # LAB_DECODE_FLAGS (say -DFATTN_DECODE_L2_EVICT_FIRST=1) and LAB_DECODE_OUT (default
      # libdecode_lab) build a variant library beside the plain one.
      # shellcheck disable=SC2086
      nvcc "${NVCC_COMMON[@]}" ${LAB_DECODE_FLAGS:-} -shared -Xcompiler -fPIC -cudart static "${LIBS[@]}" -lcuda \
        decode/decode_lab.cu -o "$ROOT/.decode-lab/${LAB_DECODE_OUT:-libdecode_lab}.so"
      ;;
    stream)
      nvcc -O3 -shared -Xcompiler -fPIC -cudart static -gencode arch=compute_90a,code=sm_90a \
        stream/stream_lab.cu -o "$ROOT/.decode-lab/libstream_lab.so"
      ;;
    *)
      echo "lab/build.sh: unknown target $t (prefill decode stream)" >&2
      exit 2
      ;;
  esac
done
