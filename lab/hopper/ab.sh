#!/usr/bin/env bash
# Same-call A/B of two lab packs (lab/pack-h90.sh): their bench binaries alternated, ROUNDS
# rounds (default 3), on the rows AB_FILTER picks (a criterion regex). Medians go to
# $OUT/r/ab_medians.txt, one "pack=A round=R group/row N us" line each.
#   device tool: carry both packs, command: bash lab/hopper/ab.sh device-pack/h90-A.tar.xz device-pack/h90-B.tar.xz
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
R="$OUT/r"; mkdir -p "$R"
# shellcheck source=lab/medians.sh
. "$LAB/medians.sh"
names=()
for pack in "$@"; do
  name="$(basename "$pack" .tar.xz)"; names+=("$name")
  mkdir -p "/tmp/ab/$name" && tar -xJf "$pack" -C "/tmp/ab/$name" || exit 1
  echo "$name: $(head -1 "/tmp/ab/$name/COMMIT")" >> "$R/ab_packs.txt"
done
for r in $(seq "${ROUNDS:-3}"); do
  for name in "${names[@]}"; do
    CRITERION_HOME="/tmp/ab/crit-$name-$r" timeout 300 "/tmp/ab/$name/bin/bench" "${AB_FILTER:-cuda_fused_attn_bf16}" \
      --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/ab/bench-$name-$r.log" 2>&1
    medians "/tmp/ab/crit-$name-$r" | sed "s/^/pack=$name round=$r /" | tee -a "$R/ab_medians.txt"
  done
done
