#!/usr/bin/env bash
# The one test command, on any machine, GPU or not (CI runs it through .ci/run):
#
#   scripts/test.sh
#
# 1. fetches the llama example's model (scripts/fetch-model.sh; cached),
# 2. `cargo fmt --check` and `cargo clippy --all-targets -D warnings` (CPU), then
#    `cargo test --release`: unit, integration, example builds and doc tests on the CPU,
#    and on a CPU with AMX the CPU tests again with the OS refusing AMX (scripts/no_amx.py),
# 3. the GPU test binary again with --nocapture, so that its SKIPPED lines show,
# 4. installs the CUDA toolkit from pinned wheels (scripts/cuda-toolkit.sh; cached) and runs
#    `cargo build --release --features cuda --all-targets` (and clippy with the feature), so a
#    kernel that does not compile fails here, on a machine with no GPU,
# 5. runs that build's unit tests and GPU test binary: without a GPU they print SKIPPED
#    (the libcuda stub answers "no device"); the GPU checks proper run on the GPU machine
#    (scripts/device-pack.sh, docs/device-loop.md).
#
# Build outputs stay outside the checkout, so a second run is warm: CPU and CUDA builds get
# separate target dirs (different features would rebuild each other's crates).
#   FUSED_ATTN_CACHE         default ~/.cache/candle-fused-attn (toolkit, model, targets)
#   FUSED_ATTN_CPU_TARGET    default $FUSED_ATTN_CACHE/target
#   FUSED_ATTN_CUDA_TARGET   default $FUSED_ATTN_CACHE/target-cuda
#   FUSED_ATTN_SKIP_CUDA=1   skip steps 4-8 (for a quick CPU-only loop)
#
# 6. candle-transformers 0.11.1 through the [patch] (compat/transformers-check): llama on the
#    real SmolLM2 weights, mistral, gemma and gemma2 on random weights, flash vs naive. Its
#    `flash-attn` feature enables candle's `cuda`, so it needs the toolkit of step 4 and
#    shares the CUDA target dir.
# 7. the published crate (scripts/package-check.sh): `cargo publish --dry-run` on a clean
#    clone of HEAD, the packaged crate built with `--features cuda`, docs as on docs.rs.
# 8. MSRV: `cargo +$MSRV check` of the library and tests (CPU; the toolchain is installed with
#    rustup's minimal profile when missing; FUSED_ATTN_SKIP_MSRV=1 skips it).
# Measured times are in docs/device-loop.md; CI's budget is 90 minutes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
CPU_TARGET="${FUSED_ATTN_CPU_TARGET:-$FUSED_ATTN_CACHE/target}"
CUDA_TARGET="${FUSED_ATTN_CUDA_TARGET:-$FUSED_ATTN_CACHE/target-cuda}"
mkdir -p "$FUSED_ATTN_CACHE"

T_START=$SECONDS
step() { echo; echo "=== test.sh: $* (at $((SECONDS - T_START)) s)"; }

if [ -x scripts/fetch-model.sh ]; then
  step "model for the llama example and its test"
  scripts/fetch-model.sh
fi

step "formatting: cargo fmt --check (rustfmt.toml)"
cargo fmt --check

step "lints: cargo clippy --release --all-targets -D warnings (target $CPU_TARGET)"
CARGO_TARGET_DIR="$CPU_TARGET" cargo clippy --release --all-targets -- -D warnings

step "CPU: cargo test --release (target $CPU_TARGET)"
CARGO_TARGET_DIR="$CPU_TARGET" cargo test --release

# A CPU with AMX runs the CPU sweep a second time with the OS refusing the AMX permission
# (scripts/no_amx.py, a seccomp filter), as on an AVX-512 CPU without AMX: the avx512-amx
# path must report itself unavailable (a SKIPPED line) and every other path still pass.
if grep -q amx_tile /proc/cpuinfo 2>/dev/null && command -v python3 >/dev/null; then
  step "CPU tests with the AMX permission refused (scripts/no_amx.py)"
  python3 scripts/no_amx.py --check
  CARGO_TARGET_DIR="$CPU_TARGET" python3 scripts/no_amx.py cargo test --release --test cpu -- --nocapture 2>&1 \
    | grep -E "no_amx|SKIPPED.*amx|ran cpu paths|test result|FAILED|panicked"
  test "${PIPESTATUS[0]}" -eq 0
else
  step "no AMX on this CPU: the AMX-refused run of the CPU tests is skipped"
fi

if [ -f tests/gpu.rs ]; then
  step "GPU tests on this machine (they print SKIPPED without a CUDA build or device)"
  CARGO_TARGET_DIR="$CPU_TARGET" cargo test --release --test gpu -- --nocapture --test-threads=1
fi

if [ "${FUSED_ATTN_SKIP_CUDA:-0}" = 1 ]; then
  step "CUDA build skipped (FUSED_ATTN_SKIP_CUDA=1)"
else
  step "CUDA toolkit (pinned wheels, cached in $FUSED_ATTN_CACHE)"
  eval "$(scripts/cuda-toolkit.sh)"
  nvcc --version | tail -2
  step "CUDA: cargo build --release --features cuda --all-targets (target $CUDA_TARGET)"
  CARGO_TARGET_DIR="$CUDA_TARGET" cargo build --release --features cuda --all-targets
  step "lints with the cuda feature: cargo clippy --release --features cuda --all-targets -D warnings"
  CARGO_TARGET_DIR="$CUDA_TARGET" cargo clippy --release --features cuda --all-targets -- -D warnings

  # The CUDA build's own unit tests (pure host code) and the GPU binary. Without a driver,
  # the toolkit's libcuda stub answers CUDA_ERROR_NO_DEVICE and every GPU test prints
  # SKIPPED; with one (a GPU machine with Rust), the real driver runs them.
  CU_LIB="$(dirname "$(readlink -f "$CUDA_HOME/bin")")/lib"
  if ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
    RUN_LIBS="$CU_LIB"
  else
    RUN_LIBS="$CUDA_HOME/lib64"
  fi
  step "CUDA: unit tests and GPU tests of the CUDA build (LD_LIBRARY_PATH=$RUN_LIBS)"
  LD_LIBRARY_PATH="$RUN_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CARGO_TARGET_DIR="$CUDA_TARGET" \
    cargo test --release --features cuda --lib --test gpu -- --nocapture --test-threads=1
fi

if [ "${FUSED_ATTN_SKIP_CUDA:-0}" != 1 ]; then
  step "candle-transformers through the [patch] (compat/transformers-check, target $CUDA_TARGET)"
  (
    cd compat/transformers-check
    CARGO_TARGET_DIR="$CUDA_TARGET" cargo fmt --check
    CARGO_TARGET_DIR="$CUDA_TARGET" cargo clippy --release --all-targets --locked -- -D warnings
    LD_LIBRARY_PATH="$RUN_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CARGO_TARGET_DIR="$CUDA_TARGET" \
      cargo test --release --locked -- --nocapture
  )

  step "the published crate: scripts/package-check.sh"
  FUSED_ATTN_CPU_TARGET="$CPU_TARGET" FUSED_ATTN_CUDA_TARGET="$CUDA_TARGET" scripts/package-check.sh

  MSRV="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
  if [ "${FUSED_ATTN_SKIP_MSRV:-0}" = 1 ]; then
    step "MSRV $MSRV check skipped (FUSED_ATTN_SKIP_MSRV=1)"
  elif ! command -v rustup >/dev/null; then
    step "MSRV $MSRV check skipped: no rustup to install the toolchain"
  else
    step "MSRV: cargo +$MSRV check --lib --tests (target $FUSED_ATTN_CACHE/target-msrv)"
    rustup toolchain list | grep -q "^$MSRV" || rustup toolchain install "$MSRV" --profile minimal
    CARGO_TARGET_DIR="$FUSED_ATTN_CACHE/target-msrv" cargo "+$MSRV" check --release --lib --tests --locked
  fi
fi

step "all steps passed in $((SECONDS - T_START)) s"
