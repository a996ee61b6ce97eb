#!/usr/bin/env bash
# Builds the two packs of the A/B (run from the repository root, on a clean tree at the commit
# that carries this folder): s21a = HEAD, s21p = pairs.diff with per-pair partials on for every
# f16/bf16 tile of <= 16 rows (per-warp bound 0, per-pair bound 16).
set -euo pipefail
bash lab/pack-h90.sh s21a
git apply lab/results/s21-decode-pairs-compile/pairs.diff
sed -i 's/^pub(super) const PER_WARP_PARTIALS_MAX_ROWS: usize = 8;/pub(super) const PER_WARP_PARTIALS_MAX_ROWS: usize = 0;/; s/^pub(super) const PER_PAIR_PARTIALS_MAX_ROWS: usize = 8;/pub(super) const PER_PAIR_PARTIALS_MAX_ROWS: usize = 16;/' src/cuda/heuristics.rs
grep -n "PARTIALS_MAX_ROWS: usize" src/cuda/heuristics.rs
bash lab/pack-h90.sh s21p
git checkout -- src kernels
for t in s21a s21p; do
  d=$(mktemp -d); tar -xJf device-pack/h90-$t.tar.xz -C $d; XZ_OPT="-9 -T0" tar -cJf device-pack/h90-$t-9.tar.xz -C $d .; rm -rf $d
done
ls -la device-pack/
