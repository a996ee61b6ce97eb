#!/usr/bin/env bash
# Session 9's last device call, in priority order: the CPU bench against torch on the
# Sapphire Rapids host (issue 15, the merged f32 AVX-512 work), then the d64 Hopper-backward
# variant of branch h-d64 (64-row items) against main's binary, with torch, then its
# correctness steps. Whatever finishes comes back in $OUT.
set -uo pipefail
ROUNDS=3 bash scripts/cpu-run.sh device-pack/cpu-f32-h-cpu-f32.tar.xz "$OUT/cpu" bench 2>&1 | tail -14
tar -czf "$OUT/cpu.tgz" -C "$OUT" cpu
PACK=device-pack/d64.tar.xz EXTRA=device-pack/base.tar.xz BENCH_KINDS=auto ABENCH_FILTER='cuda_bwd_fused_bf16/.*d64' \
  bash lab/hopper/bwd.sh smoke hbwd bench abench torch racecheck memcheck sweeps 2>&1 | tail -70
