#!/usr/bin/env bash
# Runs every GPU check on the GPU machine, which has the driver, PyTorch and compute-sanitizer
# but no Rust: the binaries come prebuilt in the pack that scripts/device-pack.sh made.
#
#   bash scripts/device-run.sh PACK.tar.xz OUT_DIR [STAGE...]
#
# Stages (default `all` = tests oracle sanitize bench llama):
#   tests     the GPU integration tests (tests/gpu.rs), --nocapture --test-threads=1
#   oracle    scripts/torch_oracle.py writes PyTorch float64 SDPA cases, then the Rust
#             test gpu_torch_oracle compares our output with them
#   sanitize  compute-sanitizer memcheck and racecheck on the reduced test subsets (gpu_sanitizer_*),
#             then on gpu_hopper_multicast with its naive reference on the CPU (Hopper only)
#   bench     the criterion CUDA bench group (short measurement) and, in the same run,
#             scripts/bench_torch.py (PyTorch SDPA flash and cuDNN backends)
#   torch     bench_torch.py alone
#   llama     the example: `llama <args>` for each line of llama-device.txt in the pack
#             (LLAMA_LIST=llama-device-gguf.txt picks that list instead: the real SmolLM2
#             GGUF at the path LLAMA_MODEL, which the caller brings; see docs/device-loop.md)
#   train     not in `all`: the training example, `train <args>` for each line of
#             train-device.txt in the pack. A line that starts with `expect-oom ` (stripped
#             before the run) passes only if the run exits nonzero with an out-of-memory error
#             in its output (CUDA_ERROR_OUT_OF_MEMORY or "out of memory"): the naive back end
#             at a context where it is expected not to fit. Its log is train.log.
#   cpu       not in `all`: the CPU path against PyTorch's CPU SDPA on this host's CPU
#             (scripts/bench_torch_cpu.py with bin/bench_cpu, issue 15's rows, f32 and bf16),
#             pinned to CPU_CORES (default 2,3) with 2 threads, CPU_ROUNDS rounds (default
#             2); its log is cpu_bench.log, its table cpu_bench.md.
#   transformers  not in `all`: candle-transformers 0.11.1 through the [patch]
#             (compat/transformers-check's test binaries tc-llama and tc-models) on GPU 0 in
#             bf16 against the same models with use_flash_attn false; tc-llama needs the real
#             SmolLM2 GGUF at LLAMA_MODEL, as the llama stage's gguf list does. Its log is
#             transformers.log.
#   coldstart not in `all`: with the driver's compute cache disabled (CUDA_CACHE_DISABLE=1),
#             the coldstart example in a fresh process per kernel family (prefill, decode,
#             backward) times the family's first call and a warm call; passes when every
#             first - warm is at most COLDSTART_BAR seconds (default 0.5). Log: coldstart.log.
#
# OUT_DIR gets summary.md (environment, one row per stage, pass/fail, bench tables), one log
# per stage (tests, oracle, sanitize, bench, llama, train) and the torch bench's json/md: at
# most 8 files, the most the device tool brings back (every stage in one call would be 9, so
# run train in a call of its own). Exits nonzero if any stage failed. A stage whose test
# binary printed SKIPPED on this machine failed: here there is a GPU, so a skip means the
# environment is broken.
set -uo pipefail
shopt -s nullglob # an empty bin/ (a scripts-only pack) lists nothing

if [ $# -lt 2 ]; then
  sed -n '2,38p' "$0" >&2
  exit 2
fi
PACK="$1"
OUT="$2"
shift 2
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(all)
if [ "${STAGES[*]}" = "all" ]; then
  STAGES=(tests oracle sanitize bench llama)
fi
# Per-stage time limits (s); `all` stays well inside one 10-minute device command.
: "${LIMIT_TESTS:=300}" "${LIMIT_ORACLE:=120}" "${LIMIT_SANITIZE:=150}" "${LIMIT_BENCH:=200}" "${LIMIT_LLAMA:=90}" "${LIMIT_TRAIN:=150}" "${LIMIT_TRANSFORMERS:=240}"
: "${LIMIT_RACECHECK:=300}" # racecheck of the subsets: ~155 s for gpu_sanitizer_subset alone on an H200 (its naive
                            # gradients run cuBLAS under the tool), past LIMIT_SANITIZE with the two varlen subsets
: "${LIMIT_COLDSTART:=120}" # per family: a JIT of all three files took about 15 s each on an H100
: "${COLDSTART_BAR:=0.5}"   # seconds a family's first call may cost over a warm one
: "${BENCH_FILTER:=cuda}"   # criterion filter for the bench stage
# TESTS_FILTER (default: all) selects GPU tests by name for the tests stage.

mkdir -p "$OUT"
WORK="${DEVICE_RUN_WORK:-/tmp/fused-attn-device}"
rm -rf "$WORK"
mkdir -p "$WORK"
tar -xJf "$PACK" -C "$WORK" || { echo "cannot unpack $PACK" >&2; exit 2; }
BIN="$WORK/bin"
SCRIPTS="$WORK/scripts"
SUMMARY="$OUT/summary.md"

# CUDA runtime libraries (cublas, curand, nvrtc, cudart) from the nvidia wheels beside torch,
# and the driver's libcuda from wherever ldconfig knows it.
CU13_LIB="$(python3 - <<'EOF'
import os
try:
    import nvidia
    for p in nvidia.__path__:
        if os.path.isdir(os.path.join(p, "cu13", "lib")):
            print(os.path.join(p, "cu13", "lib"))
            break
except ImportError:
    pass
EOF
)"
DRIVER_LIB="$(ldconfig -p | awk '/libcuda\.so\.1 / { print $NF; exit }' | xargs -r dirname)"
export LD_LIBRARY_PATH="${CU13_LIB}${DRIVER_LIB:+:$DRIVER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
GPU_NAME="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"

FAILED=0
ROWS=()
record() { # stage, PASS|FAIL, seconds, note
  ROWS+=("| $1 | $2 | $3 | $4 |")
  [ "$2" = PASS ] || FAILED=1
  echo "== $1: $2 ($3 s) $4"
}

{
  echo "GPU: $GPU_NAME"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "pack: $PACK ($(cat "$WORK/PACK_INFO" 2>/dev/null | tr '\n' ' '))"
  for b in "$BIN"/*; do
    echo "ldd $(basename "$b"): $(ldd "$b" 2>&1 | grep -c '=> not found') libraries not found"
    ldd "$b" 2>&1 | grep -E 'not found|libcuda|libcublas|libcurand|libnvrtc|libcudart' | sed 's/^/    /'
  done
} | tee "$WORK/env.txt"
MISSING_LIBS="$(for b in "$BIN"/*; do ldd "$b" 2>&1; done | grep -c '=> not found' || true)"

# Runs a command with a time limit, its output into a log; echoes elapsed seconds.
timed() { # limit log cmd...
  local limit="$1" log="$2"
  shift 2
  local t0=$SECONDS
  { printf '$'; printf ' %q' "$@"; echo; } >>"$log"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "(exit $rc after $((SECONDS - t0)) s)" >>"$log"
  return $rc
}

# A test run passes if it exits 0, ran at least one test, and nothing was skipped.
judge_tests() { # rc log label seconds
  local rc="$1" log="$2" label="$3" secs="$4"
  local skipped ran note
  skipped="$(grep -c 'SKIPPED' "$log" || true)"
  ran="$(grep -E '^test result:' "$log" | tail -1)"
  note="${ran:-no test result line}"
  if [ "$rc" -eq 0 ] && [ "$skipped" -eq 0 ] && grep -qE '^test result: ok\. [1-9]' "$log"; then
    record "$label" PASS "$secs" "$note"
  else
    [ "$skipped" -gt 0 ] && note="$note; $skipped SKIPPED lines (GPU missing?)"
    [ "$rc" -eq 124 ] && note="$note; timed out"
    record "$label" FAIL "$secs" "exit $rc; $note"
  fi
}

have_bin() { [ -x "$BIN/$1" ] || { record "$2" FAIL 0 "bin/$1 is not in the pack"; return 1; }; }

stage_tests() {
  local log="$OUT/tests.log" t0=$SECONDS
  have_bin gpu tests || return
  # TESTS_FILTER="gpu_errors gpu_decode" runs only the tests whose names contain a word.
  # shellcheck disable=SC2086
  timed "$LIMIT_TESTS" "$log" "$BIN/gpu" ${TESTS_FILTER:-} --nocapture --test-threads=1 --skip gpu_torch_oracle
  judge_tests $? "$log" tests $((SECONDS - t0))
}

stage_oracle() {
  local log="$OUT/oracle.log" t0=$SECONDS dir="$WORK/oracle"
  have_bin gpu oracle || return
  if ! timed "$LIMIT_ORACLE" "$log" python3 "$SCRIPTS/torch_oracle.py" --out "$dir"; then
    record oracle FAIL $((SECONDS - t0)) "torch_oracle.py failed (see oracle.log)"
    return
  fi
  timed "$LIMIT_ORACLE" "$log" env FUSED_ATTN_ORACLE_DIR="$dir" "$BIN/gpu" gpu_torch_oracle --exact --nocapture
  judge_tests $? "$log" oracle $((SECONDS - t0))
}

stage_sanitize() {
  local tool rc t0 log
  have_bin gpu sanitize || return
  for tool in memcheck racecheck; do
    t0=$SECONDS
    log="$WORK/sanitize-$tool.log"
    local limit="$LIMIT_SANITIZE"
    [ "$tool" = racecheck ] && limit="$LIMIT_RACECHECK"
    timed "$limit" "$log" compute-sanitizer --tool "$tool" --error-exitcode 97 \
      "$BIN/gpu" "${SANITIZE_FILTER:-gpu_sanitizer_}" --nocapture --test-threads=1
    rc=$?
    cat "$log" >>"$OUT/sanitize.log"
    local verdict
    verdict="$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^========= //')"
    if [ "$rc" -eq 0 ] && grep -qE '^test result: ok\. [1-9][0-9]* passed' "$log" && ! grep -q SKIPPED "$log"; then
      record "sanitize-$tool" PASS $((SECONDS - t0)) "${verdict:-no summary line}"
    else
      record "sanitize-$tool" FAIL $((SECONDS - t0)) "exit $rc; ${verdict:-no summary line}"
    fi
    [ -n "${SANITIZE_FILTER:-}" ] && continue
    # The Hopper K/V multicast (clusters of two, more tiles than SMs: too large for the
    # subset), its naive reference on the CPU so that racecheck sees no cuBLAS kernel (whose
    # own hazards it reports); it prints SKIPPED on GPUs other than compute capability 9.0.
    t0=$SECONDS
    log="$WORK/sanitize-$tool-multicast.log"
    timed "$LIMIT_SANITIZE" "$log" env FUSED_ATTN_NAIVE_ON_CPU=1 compute-sanitizer --tool "$tool" --error-exitcode 97 \
      "$BIN/gpu" gpu_hopper_multicast --exact --nocapture
    rc=$?
    cat "$log" >>"$OUT/sanitize.log"
    verdict="$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^========= //')"
    if [ "$rc" -eq 0 ] && grep -q SKIPPED "$log"; then
      ROWS+=("| sanitize-$tool-multicast | SKIP | $((SECONDS - t0)) | $(grep -m1 SKIPPED "$log" | cut -c1-160) |")
      echo "== sanitize-$tool-multicast: SKIP (not a compute capability 9.0 GPU)"
    elif [ "$rc" -eq 0 ] && grep -qE '^test result: ok\. 1 passed' "$log"; then
      record "sanitize-$tool-multicast" PASS $((SECONDS - t0)) "${verdict:-no summary line}"
    else
      record "sanitize-$tool-multicast" FAIL $((SECONDS - t0)) "exit $rc; ${verdict:-no summary line}"
    fi
  done
}

stage_torch() {
  local log="$OUT/bench.log" t0=$SECONDS
  if timed "$LIMIT_BENCH" "$log" python3 "$SCRIPTS/bench_torch.py" --out "$OUT" --rep-ms "${TORCH_REP_MS:-200}"; then
    record torch-sdpa PASS $((SECONDS - t0)) "$(grep -c ' us ' "$log") timings, $(grep -c 'REFUSED' "$log") refusals; table in bench_torch.md"
  else
    record torch-sdpa FAIL $((SECONDS - t0)) "bench_torch.py failed (see bench.log)"
  fi
}

stage_bench() {
  local log="$OUT/bench.log" t0=$SECONDS
  if have_bin bench bench-criterion; then
    # Short criterion settings: this is a same-run comparison, not a publication run.
    timed "$LIMIT_BENCH" "$log" env CRITERION_HOME="$WORK/criterion" "$BIN/bench" "$BENCH_FILTER" --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size "${BENCH_SAMPLES:-10}" --noplot
    local rc=$?
    # Criterion's `time:` line is the mean's interval; the tables quote its median.
    python3 - "$WORK/criterion" >>"$log" <<'PY'
import json, pathlib, sys
rows = sorted(pathlib.Path(sys.argv[1]).glob("*/*/new/estimates.json"))
print("\ncriterion medians (µs):")
for f in rows:
    median_ns = json.loads(f.read_text())["median"]["point_estimate"]
    print(f"{f.parts[-4]}/{f.parts[-3]} {median_ns / 1e3:.2f}")
PY
    if [ "$rc" -eq 0 ] && grep -q 'time:' "$log"; then
      record bench-criterion PASS $((SECONDS - t0)) "$(grep -c 'time:' "$log") benchmarks (filter '$BENCH_FILTER')"
    else
      record bench-criterion FAIL $((SECONDS - t0)) "exit $rc; $(grep -c 'time:' "$log") timings"
    fi
  fi
  stage_torch
}

stage_cpu() {
  local log="$OUT/cpu_bench.log" t0=$SECONDS
  have_bin bench_cpu cpu-bench || return
  { lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|MHz'; grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort | uniq -c; } >>"$log" 2>&1
  if timed "${LIMIT_CPU:-300}" "$log" taskset -c "${CPU_CORES:-2,3}" python3 "$SCRIPTS/bench_torch_cpu.py" \
    --bin "$BIN/bench_cpu" --threads 2 --rounds "${CPU_ROUNDS:-2}" --out "$WORK/cpu"; then
    cp "$WORK/cpu/cpu_bench.md" "$OUT/cpu_bench.md"
    record cpu-bench PASS $((SECONDS - t0)) "ours vs torch CPU SDPA; table in cpu_bench.md"
  else
    record cpu-bench FAIL $((SECONDS - t0)) "bench_torch_cpu.py failed (see cpu_bench.log)"
  fi
}

stage_llama() {
  local log="$OUT/llama.log" t0 n=0 line
  have_bin llama llama || return
  local list="$WORK/${LLAMA_LIST:-llama-device.txt}"
  if grep -q 'LLAMA_MODEL' "$list" 2>/dev/null && [ ! -f "${LLAMA_MODEL:-}" ]; then
    record llama FAIL 0 "$(basename "$list") needs LLAMA_MODEL, a GGUF file (got '${LLAMA_MODEL:-}')"
    return
  fi
  if [ ! -s "$list" ]; then
    # Not a failure of ours: nobody listed runs yet. Shown, so it is not mistaken for a pass.
    ROWS+=("| llama | SKIP | 0 | no scripts/llama-device.txt in the pack (one line of llama arguments per run) |")
    echo "== llama: SKIP (no llama-device.txt)"
    return
  fi
  while IFS= read -r line; do
    case "$line" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    t0=$SECONDS
    # The lines are the llama helper's own argument lists, split like a shell would.
    eval "set -- $line"
    if timed "$LIMIT_LLAMA" "$log" "$BIN/llama" "$@"; then
      record "llama #$n" PASS $((SECONDS - t0)) "\`$line\`"
    else
      record "llama #$n" FAIL $((SECONDS - t0)) "\`$line\` (see llama.log)"
    fi
  done <"$list"
}

stage_transformers() {
  local log="$OUT/transformers.log" t0 name
  if [ ! -f "${LLAMA_MODEL:-}" ]; then
    record transformers FAIL 0 "tc-llama needs LLAMA_MODEL, the SmolLM2 GGUF (got '${LLAMA_MODEL:-}')"
    return
  fi
  for name in models llama; do
    have_bin "tc-$name" "transformers $name" || continue
    t0=$SECONDS
    if TRANSFORMERS_CHECK_DEVICE=cuda timed "$LIMIT_TRANSFORMERS" "$log" "$BIN/tc-$name" --nocapture --test-threads=1; then
      record "transformers $name" PASS $((SECONDS - t0)) "$(grep '^test result' "$log" | tail -1)"
    else
      record "transformers $name" FAIL $((SECONDS - t0)) "see transformers.log"
    fi
  done
}

stage_train() {
  local log="$OUT/train.log" t0 n=0 line rc expect_oom line_log
  have_bin train train || return
  local list="$WORK/train-device.txt"
  if [ ! -s "$list" ]; then
    ROWS+=("| train | SKIP | 0 | no scripts/train-device.txt in the pack (one line of train arguments per run) |")
    echo "== train: SKIP (no train-device.txt)"
    return
  fi
  while IFS= read -r line; do
    case "$line" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    t0=$SECONDS
    expect_oom=0
    case "$line" in 'expect-oom '*) expect_oom=1 line="${line#expect-oom }" ;; esac
    eval "set -- $line"
    # Each run logs on its own first, so that the out-of-memory check reads only its output.
    line_log="$WORK/train-$n.log"
    : >"$line_log"
    timed "$LIMIT_TRAIN" "$line_log" "$BIN/train" "$@"
    rc=$?
    cat "$line_log" >>"$log"
    if [ "$expect_oom" -eq 0 ]; then
      if [ "$rc" -eq 0 ]; then
        record "train #$n" PASS $((SECONDS - t0)) "\`$line\`"
      else
        record "train #$n" FAIL $((SECONDS - t0)) "exit $rc: \`$line\` (see train.log)"
      fi
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] \
      && grep -qiE 'CUDA_ERROR_OUT_OF_MEMORY|out of memory' "$line_log"; then
      record "train #$n" PASS $((SECONDS - t0)) "ran out of memory, as expected: \`$line\`"
    else
      record "train #$n" FAIL $((SECONDS - t0)) "expected an out-of-memory failure, got exit $rc without one: \`$line\` (see train.log)"
    fi
  done <"$list"
}

stage_coldstart() {
  local log="$OUT/coldstart.log" t0=$SECONDS fam rc delta bad=0 notes=()
  have_bin coldstart coldstart || return
  # One fresh process per family: its first call loads that family's kernel file, the
  # driver's compute cache is off, so a JIT of PTX would show as seconds here.
  for fam in prefill decode backward; do
    timed "$LIMIT_COLDSTART" "$log" env CUDA_CACHE_DISABLE=1 "$BIN/coldstart" "$fam"
    rc=$?
    delta="$(awk -v f="$fam" '$1 == "COLDSTART" && $2 == f { d = $3 } END { print d }' "$log")"
    if [ "$rc" -ne 0 ] || [ -z "$delta" ]; then
      notes+=("$fam: exit $rc, no timing")
      bad=1
      continue
    fi
    notes+=("$fam +${delta} s")
    awk -v d="$delta" -v bar="$COLDSTART_BAR" 'BEGIN { exit !(d <= bar) }' || bad=1
  done
  local note
  note="first - warm call, CUDA_CACHE_DISABLE=1: $(IFS=';'; echo "${notes[*]}" | sed 's/;/, /g') (bar ${COLDSTART_BAR} s)"
  if [ "$bad" -eq 0 ]; then
    record coldstart PASS $((SECONDS - t0)) "$note"
  else
    record coldstart FAIL $((SECONDS - t0)) "$note"
  fi
}

for stage in "${STAGES[@]}"; do
  case "$stage" in
    tests | oracle | sanitize | bench | torch | llama | train | transformers | cpu | coldstart) "stage_$stage" ;;
    *) record "$stage" FAIL 0 "unknown stage (tests oracle sanitize bench torch llama train transformers cpu coldstart all)" ;;
  esac
done

{
  echo "# device run: ${STAGES[*]}"
  echo
  echo "- GPU: $GPU_NAME"
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- pack: $(cat "$WORK/PACK_INFO" 2>/dev/null | tr '\n' ' ')"
  echo "- libraries not found by ldd: ${MISSING_LIBS:-0}"
  echo
  echo '```'
  cat "$WORK/env.txt"
  echo '```'
  echo
  echo "| stage | result | seconds | note |"
  echo "|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  if [ -s "$OUT/bench.log" ]; then
    echo
    echo "## criterion (our kernels, candle naive)"
    echo '```'
    grep -B1 -A0 'time:' "$OUT/bench.log" | grep -v '^--$' || true
    echo '```'
  fi
  if [ -s "$OUT/cpu_bench.md" ]; then
    echo
    echo "## CPU: ours vs PyTorch CPU SDPA"
    cat "$OUT/cpu_bench.md"
  fi
  if [ -s "$OUT/coldstart.log" ]; then
    echo
    echo "## cold start (fresh process per family, CUDA_CACHE_DISABLE=1)"
    echo '```'
    grep '^coldstart ' "$OUT/coldstart.log" || true
    echo '```'
  fi
  if [ -s "$OUT/bench_torch.md" ]; then
    echo
    echo "## PyTorch SDPA"
    cat "$OUT/bench_torch.md"
  fi
  echo
  skips="$(printf '%s\n' "${ROWS[@]}" | grep -c '| SKIP |' || true)"
  if [ "$FAILED" -ne 0 ]; then
    echo "SOME STAGES FAILED"
  elif [ "$skips" -gt 0 ]; then
    echo "NO STAGE FAILED ($skips skipped)"
  else
    echo "ALL PASSED"
  fi
} >"$SUMMARY"
cat "$SUMMARY"
exit "$FAILED"
