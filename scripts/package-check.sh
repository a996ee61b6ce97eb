#!/usr/bin/env bash
# The published crate, checked as crates.io and docs.rs would see it:
#
#   scripts/package-check.sh
#
# 1. clones the repository's HEAD into a temporary folder (a clean clone: uncommitted changes
#    are not part of the check) and runs `cargo publish --dry-run` there, which packages the
#    crate (Cargo.toml `include`: src, kernels, build.rs, README, CHANGELOG, licenses) and
#    builds the package without features;
# 2. unpacks that .crate and builds it with `--features cuda` using the pinned toolkit
#    (scripts/cuda-toolkit.sh), i.e. nvcc compiles the kernels from the packaged files only;
# 3. builds the docs as docs.rs does (DOCS_RS=1, `--cfg docsrs`), with `--features cuda` and
#    NVCC pointing at a program that fails: build.rs must not run nvcc there.
#
# Targets are cached: FUSED_ATTN_CPU_TARGET and FUSED_ATTN_CUDA_TARGET as in scripts/test.sh
# (release profile throughout, so build-script runs are shared with the test builds).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export FUSED_ATTN_CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
CPU_TARGET="${FUSED_ATTN_CPU_TARGET:-$FUSED_ATTN_CACHE/target}"
CUDA_TARGET="${FUSED_ATTN_CUDA_TARGET:-$FUSED_ATTN_CACHE/target-cuda}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
T0=$SECONDS
say() { echo "=== package-check: $* (at $((SECONDS - T0)) s)"; }

say "clean clone of HEAD ($(git -C "$ROOT" rev-parse --short HEAD))"
git clone --quiet --no-hardlinks "$ROOT" "$WORK/clone"
cd "$WORK/clone"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"

say "cargo publish --dry-run (packages, then builds the package without features)"
CARGO_TARGET_DIR="$CPU_TARGET" cargo publish --dry-run
# The dry run does not leave its .crate behind (cargo 1.9x packages into a staging dir);
# `cargo package` writes the same file where the checks below read it (already verified).
CARGO_TARGET_DIR="$CPU_TARGET" cargo package --no-verify
CRATE="$CPU_TARGET/package/candle-fused-attn-$VERSION.crate"
echo "package: $CRATE ($(du -h "$CRATE" | cut -f1)); files:"
# The list once (grep -q on a pipe from tar would stop tar early: SIGPIPE under pipefail).
LIST="$(tar tzf "$CRATE")"
sed 's/^/  /' <<<"$LIST"
if grep -E '^[^/]+/(lab|docs|tests|benches|examples|scripts|compat)/' <<<"$LIST" >/dev/null; then
  echo "package-check: the package holds development files (see the list above)" >&2
  exit 1
fi
for f in build.rs kernels/fwd_sm80.cu kernels/decode_sm80.cu kernels/bwd_sm80.cu LICENSE-MIT LICENSE-APACHE CHANGELOG.md; do
  grep -qx "candle-fused-attn-$VERSION/$f" <<<"$LIST" || { echo "package-check: $f missing from the package" >&2; exit 1; }
done

say "the packaged crate with --features cuda (pinned toolkit)"
mkdir -p "$WORK/unpacked"
tar xzf "$CRATE" -C "$WORK/unpacked"
cd "$WORK/unpacked/candle-fused-attn-$VERSION"
eval "$("$ROOT/scripts/cuda-toolkit.sh")"
CARGO_TARGET_DIR="$CUDA_TARGET" cargo build --release --features cuda --locked

say "docs as docs.rs builds them (DOCS_RS=1, --features cuda, no nvcc allowed)"
DOCS_RS=1 NVCC=/bin/false RUSTDOCFLAGS="--cfg docsrs -D warnings" CARGO_TARGET_DIR="$CUDA_TARGET" \
  cargo doc --release --no-deps --features cuda --locked
DOCS_RS=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" CARGO_TARGET_DIR="$CPU_TARGET" cargo doc --release --no-deps --locked

say "passed in $((SECONDS - T0)) s"
