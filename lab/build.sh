#!/usr/bin/env bash
# Builds the lab binary here (no GPU needed) for sm_90 and packs it for the device run.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
# The baseline kernel for A/B rows in `lab bench` (LAB_VARIANTS=1): kernels/fattn_fwd.cu at
# LAB_BASE, in namespace fattn_base, without its entry points.
git show "${LAB_BASE:-082e855}:kernels/fattn_fwd.cu" |
  sed -e "s|^#include \"fattn_common.cuh\"|#include \"../../kernels/fattn_common.cuh\"|" -e '/^\/\/ ---- entry points/,$d' -e 's/^namespace fattn {/namespace fattn_base { using namespace fattn;/' > bin/base_fwd.cu
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -warn-spills -o bin/lab lab.cu
tar -cJf bin/lab.tar.xz -C bin lab
