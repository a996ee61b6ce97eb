#!/usr/bin/env bash
# Builds the packs of session 31's prepared calls (call.sh, call2.sh, call3.sh) from HEAD and
# the diffs beside this script, into $OUTDIR (default ~/packs-aside/s31): h90-s31a-9.tar.xz
# (HEAD, bench only), s31b (mask_hi_only.diff, with bin/gpu), s31c / s31d (d128_step_desc /
# d128_step_desc_rescale, bench only), s31e (half_last_block.diff, with bin/gpu). Each diff is
# applied to kernels/fwd_sm90.cu, packed, and reverted. Copy the ones a call needs into
# device-pack/ (64 MiB with the working tree: at most one pack with bin/gpu beside two without).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"; cd "$ROOT"
HERE=lab/results/s31-next
OUTDIR="${OUTDIR:-$HOME/packs-aside/s31}"; mkdir -p "$OUTDIR"
git diff --quiet kernels/ || { echo "kernels/ has uncommitted changes" >&2; exit 1; }
pack() {  # TAG KEEP_GPU [DIFF]
  local tag="$1" gpu="$2" diff="${3:-}"
  [ -n "$diff" ] && git apply "$HERE/$diff"
  lab/pack-h90.sh "$tag" > "/tmp/pack-$tag.log" 2>&1 || { [ -n "$diff" ] && git checkout kernels/fwd_sm90.cu; tail -20 "/tmp/pack-$tag.log"; return 1; }
  [ -n "$diff" ] && git checkout -q kernels/fwd_sm90.cu
  local d; d="$(mktemp -d)"; tar -xJf "device-pack/h90-$tag.tar.xz" -C "$d"; rm "device-pack/h90-$tag.tar.xz"
  [ "$gpu" = 1 ] || rm -f "$d/bin/gpu"
  [ -n "$diff" ] && echo "applied: $diff" >> "$d/COMMIT"
  XZ_OPT="-6 -T0" tar -cJf "$OUTDIR/h90-$tag-9.tar.xz" -C "$d" .; rm -rf "$d"
  ls -la "$OUTDIR/h90-$tag-9.tar.xz"
}
pack s31a 0
pack s31b 1 mask_hi_only.diff
pack s31c 0 d128_step_desc.diff
pack s31d 0 d128_step_desc_rescale.diff
pack s31e 1 half_last_block.diff
