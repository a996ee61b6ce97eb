#!/usr/bin/env bash
# Session 15's check of the Hopper decode build (kernels/decode_sm90.cu) on one lab pack:
# its tests and sanitizers, then the decode rows with the cluster kernel on and off
# (FUSED_ATTN_DECODE_CLUSTER, alternating, 3 rounds) and torch's decode rows, in one call.
#   device tool: carry the pack, command: bash lab/decode/cluster_check.sh device-pack/h90-cluster.tar.xz
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
R="$OUT/r"; mkdir -p "$R"
W=/tmp/cl; mkdir -p "$W" && tar -xJf "$1" -C "$W" || exit 1
cd "$W" || exit 1
for t in gpu_decode_cluster gpu_decode gpu_varlen_paged_decode; do
  timeout 200 bin/gpu "$t" --exact --nocapture > "$R/$t.log" 2>&1; echo "$t rc=$?" | tee -a "$R/steps.txt"
  grep -E "^$t:|test result|panicked" "$R/$t.log" | cut -c1-300
done
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --kernel-name kns=fattn_decode bin/gpu gpu_decode_cluster --exact --nocapture \
    > "$R/$tool.log" 2>&1; echo "$tool rc=$?" | tee -a "$R/steps.txt"
  grep -E "SUMMARY|test result" "$R/$tool.log" | tail -2
done
cd - > /dev/null
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_' ROUNDS=3 bash "$LAB/hopper/envab.sh" "$1" FUSED_ATTN_DECODE_CLUSTER "unset off" > "$R/envab.log" 2>&1
sort -k3,3 -k1,1 "$R/envab_medians.txt" | awk '{print $3, $1, $2, $4}'
cd "$W" && mkdir -p "$R/decode" && timeout 200 python3 scripts/bench_torch.py --out "$R/decode" --rep-ms 100 --only decode > "$R/torchd.log" 2>&1
grep -E "^\| decode" "$R/decode/bench_torch.md"
tar -czf "$OUT/r.tgz" -C "$OUT" r
