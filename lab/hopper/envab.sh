#!/usr/bin/env bash
# Same-call A/B of one lab pack's bench binary under values of one environment variable,
# alternating, ROUNDS rounds (default 3), on the rows AB_FILTER picks. Medians go to
# $OUT/r/envab_medians.txt, one "VAR=value round=R group/row N us" line each ("unset" unsets it).
#   device tool: carry the pack, command: AB_FILTER=... bash lab/hopper/envab.sh PACK VAR "v1 v2"
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
R="$OUT/r"; mkdir -p "$R"
# shellcheck source=lab/medians.sh
. "$LAB/medians.sh"
pack="$1" var="$2" values="$3"
W=/tmp/envab; mkdir -p "$W" && tar -xJf "$pack" -C "$W" || exit 1
head -1 "$W/COMMIT" > "$R/envab_pack.txt"
for r in $(seq "${ROUNDS:-3}"); do
  for v in $values; do
    if [ "$v" = unset ]; then unset "$var"; else export "$var=$v"; fi
    CRITERION_HOME="$W/crit-$v-$r" timeout 300 "$W/bin/bench" "${AB_FILTER:-cuda_fused_attn_bf16}" \
      --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$W/bench-$v-$r.log" 2>&1
    medians "$W/crit-$v-$r" | sed "s/^/$var=$v round=$r /" | tee -a "$R/envab_medians.txt"
  done
done
unset "$var"
