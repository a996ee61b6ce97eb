#!/usr/bin/env bash
# Runs a pack of scripts/cpu-pack.sh on a machine without Rust: the CPU bench against
# PyTorch's CPU SDPA (scripts/bench_torch_cpu.py) and/or the CPU test binary, pinned to
# two cores with two threads.
#
#   bash scripts/cpu-run.sh PACK OUT_DIR [bench] [tests] [noamx] [noamx-tests] [varlen]
#
# noamx and noamx-tests run the bench and the tests under scripts/no_amx.py: the OS refuses
# the AMX permission to both sides (ours and PyTorch's oneDNN), as on an AVX-512 CPU without
# AMX (OUT_DIR/noamx/). varlen runs `bench_cpu --varlen` (issue 13's packed batch against a
# loop of dense calls, interleaved) ROUNDS times per dtype f32, f16 (OUT_DIR/varlen.jsonl).
#
# CORES (default 2,3), THREADS (default 2), ROUNDS (default 2), PYTHON (default python3),
# TESTS_FILTER (test names for the test binary; default: all). OUT_DIR gets lscpu.txt,
# bench.log, cpu_bench.json/md, peaks.json (the bench stage: this core's f32 FMA and
# vdpbf16ps GFLOP/s, `bench_cpu --peaks` on the first of CORES), tests.log.
set -uo pipefail
PACK="$(realpath "$1")"; OUT="$(realpath -m "$2")"; shift 2
STAGES=("$@"); [ ${#STAGES[@]} -eq 0 ] && STAGES=(bench)
: "${CORES:=2,3}" "${THREADS:=2}" "${ROUNDS:=2}" "${PYTHON:=python3}"
mkdir -p "$OUT"
W="$(mktemp -d)"
tar -xJf "$PACK" -C "$W"
cat "$W/PACK_INFO" >"$OUT/lscpu.txt"
lscpu >>"$OUT/lscpu.txt" 2>&1
lscpu -e >>"$OUT/lscpu.txt" 2>&1   # which CPUs share a core: CORES should not
grep -E "^(cpu MHz|model name)" /proc/cpuinfo | sort | uniq -c >>"$OUT/lscpu.txt"
uptime >>"$OUT/lscpu.txt"
rc=0
for s in "${STAGES[@]}"; do
  case "$s" in
    bench)
      taskset -c "${CORES%%,*}" "$W/bin/bench_cpu" --peaks >"$OUT/peaks.json" 2>&1 || rc=1
      cat "$OUT/peaks.json"
      taskset -c "$CORES" "$PYTHON" "$W/scripts/bench_torch_cpu.py" --bin "$W/bin/bench_cpu" \
        --threads "$THREADS" --rounds "$ROUNDS" --out "$OUT" >"$OUT/bench.log" 2>&1 || rc=1
      tail -n 12 "$OUT/bench.log" ;;
    tests)
      # shellcheck disable=SC2086
      RAYON_NUM_THREADS="$THREADS" taskset -c "$CORES" "$W/bin/cpu" ${TESTS_FILTER:-} --test-threads 1 \
        >"$OUT/tests.log" 2>&1 || rc=1
      grep -E "ran cpu paths|SKIPPED|FAILED|test result" "$OUT/tests.log" | tail -n 40 ;;
    noamx)
      mkdir -p "$OUT/noamx"
      "$PYTHON" "$W/scripts/no_amx.py" --check >"$OUT/noamx/check.txt" 2>&1 || rc=1
      cat "$OUT/noamx/check.txt"
      taskset -c "$CORES" "$PYTHON" "$W/scripts/no_amx.py" "$PYTHON" "$W/scripts/bench_torch_cpu.py" \
        --bin "$W/bin/bench_cpu" --threads "$THREADS" --rounds "$ROUNDS" --out "$OUT/noamx" \
        >"$OUT/noamx/bench.log" 2>&1 || rc=1
      tail -n 12 "$OUT/noamx/bench.log" ;;
    noamx-tests)
      mkdir -p "$OUT/noamx"
      # shellcheck disable=SC2086
      RAYON_NUM_THREADS="$THREADS" taskset -c "$CORES" "$PYTHON" "$W/scripts/no_amx.py" "$W/bin/cpu" \
        ${TESTS_FILTER:-} --test-threads 1 >"$OUT/noamx/tests.log" 2>&1 || rc=1
      grep -E "no_amx|ran cpu paths|SKIPPED|FAILED|test result" "$OUT/noamx/tests.log" | tail -n 40 ;;
    varlen)
      for r in $(seq "$ROUNDS"); do
        for dt in f32 f16; do
          RAYON_NUM_THREADS="$THREADS" taskset -c "$CORES" "$W/bin/bench_cpu" --varlen --dtype "$dt" --reps 9 \
            >>"$OUT/varlen.jsonl" 2>>"$OUT/varlen.err" || rc=1
        done
      done
      grep -o '"varlen": "[a-z_]*\|"causal": [a-z]*\|"dtype": "[a-z0-9]*\|median_ms": [0-9.]*\|over_packed": [0-9.a-z]*' \
        "$OUT/varlen.jsonl" | paste - - - - - ;;
    *) echo "unknown stage $s (bench tests noamx noamx-tests varlen)"; rc=1 ;;
  esac
done
rm -rf "$W"
exit $rc
