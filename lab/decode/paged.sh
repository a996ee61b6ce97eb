#!/usr/bin/env bash
# Issue 13's paged decode on the device: the criterion group cuda_paged_decode_bf16 (contiguous,
# packed on the same K/V, paged 16/256 shuffled and in order), ncu of one call of the dense, the
# packed and the paged kernel with per-SASS-instruction stall samples, and GPU tests.
#   device tool: carry ["device-pack/h90.tar.xz"], command:
#   PACK=device-pack/h90.tar.xz bash lab/decode/paged.sh STEPS...
# STEPS: decode (issue 14's decode rows with torch), bench, abench (EXTRA pack's bin/bench_<tag>, same group), ncu, tests (TESTS: names),
# gpu (the whole GPU test binary), sanitize (memcheck and racecheck on gpu_sanitizer_varlen).
# Results: $OUT/r.tgz.
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACK="${PACK:-device-pack/h90.tar.xz}"
W=/tmp/paged; R="$OUT/r"; mkdir -p "$W" "$R"
tar -xJf "$PACK" -C "$W" || exit 1
[ -n "${EXTRA:-}" ] && { tar -xJf "$EXTRA" -C "$W" || exit 1; }
cd "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$R/gpu.txt"
cp COMMIT "$R/" 2>/dev/null
# shellcheck source=lab/medians.sh
. "$LAB/medians.sh"
G="${GROUP:-cuda_paged_decode_bf16}"
for s in "$@"; do
  t0=$SECONDS
  case "$s" in
    bench|abench)
      bins=(bin/bench); [ "$s" = abench ] && bins=(bin/bench_*)
      for round in 1 2; do
        for b in "${bins[@]}"; do
          tag=${b#bin/}; C="$W/crit-$tag-$round"
          CRITERION_HOME="$C" timeout 300 "$b" "$G" --bench --warm-up-time 0.5 --measurement-time 1 --sample-size 10 \
            --noplot > "$R/bench_${tag}_$round.log" 2>&1
          medians "$C" > "$R/medians_${tag}_$round.txt"
          echo "== $tag round $round"; cat "$R/medians_${tag}_$round.txt"
        done
      done ;;
    ncu)
      for row in ${NCU_ROWS:-contiguous_hostidx_b8 packed_hostidx_b8 paged256_hostidx_b8 paged16_hostidx_b8}; do
        case $row in contiguous_hostidx_b8) f="contiguous_b8_h32_kv8_q1_k8192_d128" ;;
                     *) f="${row}_h32_kv8_q1_k8192_d128" ;; esac
        timeout 150 ncu --set full --import-source no -k "regex:${KREGEX:-fattn_decode}" -c 1 -f -o "$W/rep_$row" \
          bin/bench "$G/$f\$" --bench --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10 --noplot \
          > "$R/ncu_run_$row.log" 2>&1
        ncu -i "$W/rep_$row.ncu-rep" --page details > "$R/ncu_$row.txt" 2>&1
        ncu -i "$W/rep_$row.ncu-rep" --page source --csv --print-source sass > "$R/sass_$row.csv" 2>&1
        grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Registers Per|Executed Instructions  " "$R/ncu_$row.txt" \
          | sed "s/^/$row: /"
      done ;;
    decode) # issue 14's decode rows: ours (criterion) and torch SDPA flash/cuDNN (do_bench), same call
      CRITERION_HOME="$W/crit-decode" timeout 300 bin/bench 'cuda_fused_attn_bf16/.*_q(1|4)_k' --bench --warm-up-time 1 \
        --measurement-time 2 --sample-size 20 --noplot > "$R/decode_bench.log" 2>&1
      medians "$W/crit-decode" | tee "$R/decode_medians.txt"
      timeout 200 python3 scripts/bench_torch.py --out "$R" --only decode > "$R/decode_torch.log" 2>&1
      grep -E "^\| decode" "$R"/bench_torch*.md | head -8 ;;
    tests)
      for t in ${TESTS:-gpu_varlen_paged_decode gpu_varlen_matches_dense_per_sequence gpu_decode}; do
        timeout 300 bin/gpu "$t" --exact --nocapture
      done > "$R/tests.log" 2>&1
      grep -E "^test |test result|panicked|SKIPPED" "$R/tests.log" | head -30 ;;
    gpu) timeout 560 bin/gpu --nocapture --test-threads 1 > "$R/gpu.log" 2>&1
         grep -E "^test .*(FAILED|ok)$|test result|SKIPPED" "$R/gpu.log" | grep -v " ok$" | head -30
         grep -c " ok$" "$R/gpu.log" ;;
    sanitize)
      for tool in memcheck racecheck; do
        timeout 250 compute-sanitizer --tool $tool bin/gpu gpu_sanitizer_varlen --exact --nocapture > "$R/$tool.log" 2>&1
        grep -E "SUMMARY|test result" "$R/$tool.log" | tail -2
      done ;;
  esac
  echo "$s rc=$? $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
done
tar -czf "$OUT/r.tgz" -C "$OUT" r
