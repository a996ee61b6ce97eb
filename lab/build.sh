#!/usr/bin/env bash
# Builds the lab binary here (no GPU needed) for sm_90 and packs it for the device run.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -warn-spills -o bin/lab lab.cu
tar -cJf bin/lab.tar.xz -C bin lab
