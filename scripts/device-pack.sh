#!/usr/bin/env bash
# Builds the GPU binaries here (no GPU needed) and packs them for the GPU machine, which has
# no Rust: the GPU test binary (tests/gpu.rs), the bench binary (benches/attention.rs) and
# the llama, train and coldstart examples, stripped, with the scripts they need, as one .tar.xz in device-pack/
# (git-ignored; it travels to the device through `carry`). Prints what to send.
#
#   scripts/device-pack.sh
#
# Environment: FUSED_ATTN_CACHE (toolkit cache, as scripts/cuda-toolkit.sh), CARGO_TARGET_DIR
# (default: $FUSED_ATTN_CACHE/target-cuda, outside the checkout so builds stay warm),
# CUDA_COMPUTE_CAP (default 90: sm_90 cubin/PTX of candle's own kernels for the H100/H200),
# FUSED_ATTN_CUDA_ARCHS (unset: our kernels' full fatbin, cubins for sm_80 and sm_90 and
# compute_80 PTX; `90` builds only the sm_90 cubins, faster, for an H100/H200-only pack),
# FUSED_ATTN_FATBIN_COMPRESSION (default here: size, 2x smaller fatbins for about 32 s
# more CPU; every binary embeds the kernels, and with the default `fast` the five binaries
# make an 82 MiB pack, over the 64 MiB that travels).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE="${FUSED_ATTN_CACHE:-$HOME/.cache/candle-fused-attn}"
export FUSED_ATTN_CACHE="$CACHE"
eval "$(scripts/cuda-toolkit.sh)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target-cuda}"
export FUSED_ATTN_FATBIN_COMPRESSION="${FUSED_ATTN_FATBIN_COMPRESSION:-size}"
PACK_DIR="$ROOT/device-pack"
PACK="$PACK_DIR/fused-attn-device.tar.xz"
STAGE="$PACK_DIR/stage"

# Only the targets that exist yet; each maps to its name inside the pack.
targets=()
[ -f tests/gpu.rs ] && targets+=(--test gpu)
[ -f benches/attention.rs ] && targets+=(--bench attention)
{ [ -f examples/llama.rs ] || [ -f examples/llama/main.rs ]; } && targets+=(--example llama)
[ -f examples/train.rs ] && targets+=(--example train)
[ -f examples/bench_cpu.rs ] && targets+=(--example bench_cpu)
[ -f examples/coldstart.rs ] && targets+=(--example coldstart)
if [ ${#targets[@]} -eq 0 ]; then
  echo "device-pack: nothing to build (no tests/gpu.rs, benches/attention.rs or examples/llama.rs)" >&2
  exit 1
fi

echo "device-pack: cargo build --release --features cuda ${targets[*]} (target dir $CARGO_TARGET_DIR)" >&2
t0=$SECONDS
# The executables' paths come from cargo's own JSON messages, not from globbing deps/.
artifacts="$(cargo build --release --features cuda "${targets[@]}" --message-format=json-render-diagnostics \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null)
           | "\(.target.kind[0]) \(.target.name) \(.executable)"')"
echo "device-pack: build took $((SECONDS - t0)) s" >&2

rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/scripts"
while read -r kind name exe; do
  case "$kind/$name" in
    test/gpu) dest=gpu ;;
    bench/attention) dest=bench ;;
    example/llama) dest=llama ;;
    example/train) dest=train ;;
    example/bench_cpu) dest=bench_cpu ;;
    example/coldstart) dest=coldstart ;;
    *) continue ;;
  esac
  strip -o "$STAGE/bin/$dest" "$exe"
  echo "device-pack: bin/$dest <- $exe ($(du -h "$exe" | cut -f1) -> $(du -h "$STAGE/bin/$dest" | cut -f1) stripped)" >&2
done <<<"$artifacts"

# candle-transformers through the [patch] (compat/transformers-check): its test binaries, for
# device-run.sh's `transformers` stage; PACK_TRANSFORMERS=1 builds them (a long first build).
if [ "${PACK_TRANSFORMERS:-0}" = 1 ] && [ -f compat/transformers-check/Cargo.toml ]; then
  echo "device-pack: compat/transformers-check: cargo test --release --no-run" >&2
  tc="$( (cd compat/transformers-check && cargo test --release --no-run --locked --message-format=json-render-diagnostics) \
    | jq -r 'select(.reason == "compiler-artifact" and .executable != null and .target.kind[0] == "test")
             | "\(.target.name) \(.executable)"')"
  while read -r name exe; do
    case "$name" in llama | models) ;; *) continue ;; esac
    strip -o "$STAGE/bin/tc-$name" "$exe"
    echo "device-pack: bin/tc-$name <- $exe ($(du -h "$STAGE/bin/tc-$name" | cut -f1) stripped)" >&2
  done <<<"$tc"
fi

cp scripts/device-run.sh scripts/torch_oracle.py scripts/bench_torch.py scripts/bench_torch_varlen.py \
  scripts/bench_torch_cpu.py "$STAGE/scripts/"
# The llama and train examples' device runs: one line of arguments per run.
cp scripts/llama-device*.txt scripts/train-device.txt "$STAGE/" 2>/dev/null || true
{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src kernels build.rs Cargo.toml tests benches examples || echo '+dirty')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC') CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP FUSED_ATTN_CUDA_ARCHS=${FUSED_ATTN_CUDA_ARCHS:-all} FUSED_ATTN_FATBIN_COMPRESSION=$FUSED_ATTN_FATBIN_COMPRESSION"
} >"$STAGE/PACK_INFO"

rm -f "$PACK"
# xz -2: 24 MiB in 10 s; -6 gave 19 MiB but took about 2.5 min on 2 busy cores.
XZ_OPT="-2 -T0" tar -cJf "$PACK" -C "$STAGE" .
rm -rf "$STAGE"

# Everything that travels: the tracked and untracked-not-ignored files, plus the pack.
tree_bytes="$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)"
pack_bytes="$(stat -c %s "$PACK")"
limit=$((64 * 1024 * 1024))
echo "device-pack: $PACK is $((pack_bytes / 1024 / 1024)) MiB; working tree $((tree_bytes / 1024 / 1024)) MiB; limit 64 MiB together" >&2
if [ $((pack_bytes + tree_bytes)) -gt "$limit" ]; then
  echo "device-pack: too large to carry" >&2
  exit 1
fi

cat <<EOF
Send to the GPU machine (device tool \`run\`):
  carry:   ["device-pack"]
  command: bash scripts/device-run.sh device-pack/fused-attn-device.tar.xz \$OUT all
Stages instead of \`all\`: tests oracle sanitize bench torch llama; train, transformers, cpu and coldstart (not in \`all\`). The table comes back in summary.md.
EOF
