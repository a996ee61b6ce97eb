# The decode A/B call's shape (session 23 call 5, session 24 calls 1-2 wrote it inline): the
# decode tests and compute-sanitizer tools on the new pack, bench rows alternating between
# packs, torch's decode rows in the same call. For device call scripts to source.
#   . lab/decode/check_ab.sh
#   gpu_info                   # the GPU's name, driver and clock into $R/gpu0.txt
#   decode_tests NEW [TOOLS]   # TOOLS: compute-sanitizer tools on gpu_sanitizer_subset, default memcheck
#   bench_ab FILTER ROUNDS PACK...  # the bench's rows matching FILTER, packs alternating (reversed
#                              # on even rounds: use an even count), then the table
#   decode_ab OLD NEW [ROUNDS] # bench_ab of the dense decode rows (default 3 rounds)
#   paged_ab OLD NEW [ROUNDS]  # bench_ab of issue 13's paged-decode rows (contiguous, packed, pages 16/256)
#   torch_decode               # scripts/bench_torch.py --only decode
#   kernel_durations PACK ROW...  # ncu's per-kernel durations (median) of cuda_paged_decode_bf16 rows
#   run_cfg LABEL PACK FILTER ROUND [VAR=VAL ...]  # the pack's bench rows under those variables,
#                              # medians to $R/cfg_medians.txt as cfg=LABEL round=ROUND
#   cfg_rounds ROUNDS "LABEL PACK FILTER [VAR=VAL ...]" ...  # run_cfg of each config, ROUNDS
#                              # rounds, the order reversed on even rounds
#   envab PACK FILTER ROUNDS VAR "label=value ..."  # one pack's bench rows under values of VAR,
#                              # alternating ("unset" unsets it); medians to $R/envab_medians.txt
#   gpu_all PACK [SECONDS]     # the pack's whole GPU test binary (oracle skipped), then the oracle
#   cuda_hunt PACK [SECONDS]   # the panic hunt with every input on the GPU (PACK_HUNT=1 pack; N=
#                              # seeds, default 1500), its summary; on a CUDA FAULT, memcheck up to that seed
#   gpu_tests PACK "TOOLS" TEST...  # those tests of the pack's GPU binary, then each
#                              # compute-sanitizer tool of TOOLS on gpu_sanitizer_subset
#   torch_both TAG             # torch's prefill and decode tables (cuDNN, FA2) into $R/torchTAG
#   fwd_durations PACK LABEL ROW...  # ncu's median duration of each fattn_fwd kernel (50+
#                              # launches) on cuda_fused_attn_bf16 rows, under the current env
#   table_runs PACK            # issue 14's table: torch run 1, the pack's cuda_fused_attn_bf16
#                              # rows, torch run 2 (python3 lab/results/s28-call3/table.py $R)
#   table_call PACK            # synccheck of the subset, then table_runs
#   table_md                   # table.py of $R into $R/table.md (printed) and $R/table_readme.md
#   pooled_runs PACK [N]       # issue 14's table pooled (session 58): a warm-up torch run, then
#                              # torch 1, ours 1, ..., ours N, torch N+1 (default N 3), nvidia-smi
#                              # into $R/smi.csv; each table k in $R/tk/, the pooled verdict in $R/pooled.md
#   coldstart_stage PACK       # device-run.sh's coldstart stage on the pack (CUDA_CACHE_DISABLE=1)
#   sanitize_stage PACK        # device-run.sh's sanitize stage: memcheck and racecheck of gpu_sanitizer_
#   synccheck_stage PACK       # synccheck of gpu_sanitizer_subset and of gpu_hopper_multicast
#   ncu_vs_cudnn PACK "KERNEL B H HKV SQ SK D CAUSAL ROW" ...  # ncu (clocks free, 3 launches) of our
#                              # kernel on the bench row and of cuDNN's on the same shape: time,
#                              # clock, DRAM %, issue %, tensor pipe %, registers, grid
#   pack_tests PACK TEST...    # those tests of the pack's GPU binary, each --exact, 100 s at
#                              # most, into $R/tests.log; prints each one's rc and summary lines
#   archived FUNCTION          # runs it, its output also in $R/call.log, then $R as $OUT/r.tgz
# Packs are lab pack tags: device-pack/h90-TAG-9.tar.xz, unpacked to /tmp/TAG. $R is the
# results folder, $L the checkout (defaults below). The device tool returns only a few files of $OUT: archive.
# Sourcing sets the call's defaults: $R (/tmp/r unless set), $L (the checkout), the bench's
# CUDA-only switch.
CHECK_LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
L="${L:-$(dirname "$CHECK_LAB")}"; R="${R:-/tmp/r}"; mkdir -p "$R"
export FUSED_ATTN_BENCH_CUDA_ONLY=1
# Bench filters: issue 14's five decode rows; its (1,32,8,1,2048,128) row alone.
DECODE_ROWS='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k'
ROW_2048='cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$'
. "$CHECK_LAB/medians.sh"
unpack() { [ -d "/tmp/$1/bin" ] || { mkdir -p "/tmp/$1" && tar -xJf "$L/device-pack/h90-$1-9.tar.xz" -C "/tmp/$1"; }; }
decode_tests() {
  unpack "$1" || return 1
  (cd "/tmp/$1" && head -3 COMMIT
   for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do
     FUSED_ATTN_BENCH_CUDA_ONLY=1 timeout 120 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|cases ×|test result|panicked" "$R/tests.log" | cut -c1-200
   for tool in ${2:-memcheck}; do
     timeout 100 compute-sanitizer --tool "$tool" bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
   done)
}
bench_ab() {
  local filter="$1" rounds="$2"; shift 2
  for t in "$@"; do unpack "$t" || return 1; done
  for r in $(seq "$rounds"); do
    # Even rounds run the packs in reverse (A B, B A, ...): session 33's one-round A/Bs put
    # the base pack first every time on power-capped rows.
    local order=("$@")
    if (( r % 2 == 0 )); then mapfile -t order < <(printf '%s\n' "$@" | tac); fi
    for t in "${order[@]}"; do
    CRITERION_HOME="/tmp/crit-$t-$r" timeout 100 "/tmp/$t/bin/bench" "$filter" --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/ab_${t}_$r.log" 2>&1
    medians "/tmp/crit-$t-$r" | sed "s/^/pack=$t round=$r /" >> "$R/ab_medians.txt"
  done; done
  python3 "$CHECK_LAB/hopper/ab_table.py" "$R/ab_medians.txt"
}
decode_ab() { bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' "${3:-3}" "$1" "$2"; }
paged_ab() {
  bench_ab 'cuda_paged_decode_bf16/(contiguous|paged(16|256)_hostidx|packed_hostidx)' "${3:-3}" "$1" "$2"
}
run_cfg() {  # LABEL PACK FILTER ROUND [VAR=VAL ...]
  local label="$1" pack="$2" filter="$3" r="$4"; shift 4
  unpack "$pack" || return 1
  (cd "/tmp/$pack" && env "$@" CRITERION_HOME="/tmp/crit-$label-$r" timeout 120 bin/bench "$filter" --bench \
    --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/cfg_${label}_$r.log" 2>&1)
  medians "/tmp/crit-$label-$r" | sed "s/^/cfg=$label round=$r /" | tee -a "$R/cfg_medians.txt"
}
cfg_rounds() {  # ROUNDS CONFIG...: each CONFIG "LABEL PACK FILTER [VAR=VAL ...]" (no spaces inside a field)
  local rounds="$1"; shift
  for r in $(seq "$rounds"); do
    local order=("$@")
    if (( r % 2 == 0 )); then mapfile -t order < <(printf '%s\n' "$@" | tac); fi
    local c f
    for c in "${order[@]}"; do
      read -ra f <<<"$c"
      run_cfg "${f[0]}" "${f[1]}" "${f[2]}" "$r" "${f[@]:3}"
    done
  done
}
gpu_info() {
  # Each call may start a different machine, and the H200s differ by more than some rows'
  # margins (session 46): record what tells them apart.
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit,vbios_version,pci.bus_id,uuid \
    --format=csv > "$R/gpu0.txt"; cat "$R/gpu0.txt"
}
archived() {
  "$@" 2>&1 | tee "$R/call.log"
  tar -czf "$OUT/r.tgz" -C "$(dirname "$R")" "$(basename "$R")"
}
torch_decode() {
  mkdir -p "$R/decode"
  timeout 60 python3 "$L/scripts/bench_torch.py" --out "$R/decode" --rep-ms 100 --only decode > "$R/torchd.log" 2>&1
  echo "torchd rc=$?"; grep -E "^\| decode" "$R/decode/bench_torch.md" | cut -d'|' -f3,4,5,8
}
kernel_durations() {
  local t="$1"; shift; unpack "$t" || return 1
  for row in "$@"; do
    (cd "/tmp/$t" && timeout 60 ncu --metrics gpu__time_duration.sum,launch__registers_per_thread \
      -k regex:fattn_decode --csv bin/bench "cuda_paged_decode_bf16/$row\$" --bench --warm-up-time 0.1 \
      --measurement-time 0.3 --sample-size 10 --noplot > "$R/ncu_${t}_$row.csv" 2>/dev/null)
    python3 - "$R/ncu_${t}_$row.csv" "$t" "$row" <<'PY'
import collections, csv, statistics, sys
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] in ("gpu__time_duration.sum", "launch__registers_per_thread"):
        d[(r[4][:40], r[-3][:24])].append(float(r[-1].replace(",", "")))
for (kernel, metric), v in sorted(d.items()):
    print(sys.argv[2], sys.argv[3], kernel, metric, len(v), "median", statistics.median(v))
PY
  done
}
envab() {
  local pack="$1" filter="$2" rounds="$3" var="$4" pairs="$5"
  unpack "$pack" || return 1
  for r in $(seq "$rounds"); do
    local order=($pairs)  # A B, B A, ...
    if (( r % 2 == 0 )); then mapfile -t order < <(printf '%s\n' $pairs | tac); fi
    for lv in "${order[@]}"; do
    local label="${lv%%=*}" val="${lv#*=}"
    if [ "$val" = unset ]; then unset "$var"; else export "$var=$val"; fi
    CRITERION_HOME="/tmp/crit-$label-$r" timeout 120 "/tmp/$pack/bin/bench" "$filter" --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/envab_${label}_$r.log" 2>&1
    medians "/tmp/crit-$label-$r" | sed "s/^/cfg=$label round=$r /" | tee -a "$R/envab_medians.txt"
  done; done
  unset "$var"
}
gpu_all() {
  unpack "$1" || return 1
  (cd "/tmp/$1" && head -1 COMMIT
   timeout "${2:-270}" bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > "$R/all.log" 2>&1; echo "all rc=$?"
   grep -E "^test result|FAILED|SKIPPED|panicked" "$R/all.log" | cut -c1-250 | head -20
   timeout 60 python3 scripts/torch_oracle.py --out /tmp/oracle > "$R/oracle.log" 2>&1; echo "oracle gen rc=$?"
   FUSED_ATTN_ORACLE_DIR=/tmp/oracle timeout 60 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
   echo "oracle rc=$?"; grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | head -5)
}
table_runs() {  # PACK: torch run 1, the pack's cuda_fused_attn_bf16 rows, torch run 2
  unpack "$1" || return 1
  torch_both 1
  CRITERION_HOME=/tmp/crit-table timeout 220 "/tmp/$1/bin/bench" cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench.log" 2>&1
  echo "bench rc=$?"; medians /tmp/crit-table | tee "$R/medians.txt"
  torch_both 2
}
issue13_rows() {  # PACK CPUPACK: issue 13's GPU rows (2 rounds, torch's FA2 varlen) and the host CPU cell
  # (CPU_VARIANTS: bench_cpu --varlen's --only list, default packed,loop,packed_into)
  local t="$1" c="$2"
  unpack "$t"; unpack "$c"
  export FUSED_ATTN_BENCH_CUDA_ONLY=1
  for r in 1 2; do
    (cd "/tmp/$t" && CRITERION_HOME=/tmp/vcrit-$r timeout 240 bin/bench 'cuda_(varlen|paged_decode)_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/vbench_$r.log" 2>&1)
    echo "vbench $r rc=$?"; medians /tmp/vcrit-$r | sed "s/^/round=$r /" | tee -a "$R/vmedians.txt"
  done
  (cd "/tmp/$t" && timeout 150 python3 scripts/bench_torch_varlen.py --out "$R" > "$R/torch_varlen.log" 2>&1); echo "torch varlen rc=$?"
  tail -12 "$R/torch_varlen.log"
  lscpu > "$R/lscpu.txt"
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 110 taskset -c 2,3 "/tmp/$c/bin/bench_cpu" --varlen --dtype ${run%_*} --reps 31 \
      --only "${CPU_VARIANTS:-packed,loop,packed_into}" > "$R/cpu_$run.json" 2> "$R/cpu_$run.err"
    echo "cpu $run rc=$?"; cut -c1-40,200-400 "$R/cpu_$run.json" | head -8
  done
}
table_md() {
  python3 "$L/lab/results/s28-call3/table.py" "$R" > "$R/table.md" 2>&1; cat "$R/table.md"
  python3 "$L/lab/results/s28-call3/table.py" "$R" --readme > "$R/table_readme.md" 2>&1
}
pack_tests() {
  local t="$1"; shift; unpack "$t" || return 1
  (cd "/tmp/$t" && cat COMMIT
   for x in "$@"; do
     timeout 100 bin/gpu "$x" --exact --nocapture; echo "$x rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|test result|panicked|cases" "$R/tests.log" | cut -c1-240 | head -40)
}
table_call() {  # PACK: sessions 30-31's table calls (python3 lab/results/s28-call3/table.py r)
  gpu_info
  gpu_tests "$1" "synccheck"
  table_runs "$1"
  cd "$L"
}
torch_both() {  # TAG: torch's prefill and decode rows (cuDNN and FA2) into $R/torchTAG
  mkdir -p "$R/torch$1" "$R/torch$1/decode"
  timeout 150 python3 "$L/scripts/bench_torch.py" --out "$R/torch$1" --rep-ms 100 --only prefill > "$R/torch$1.log" 2>&1; echo "torch$1 prefill rc=$?"
  timeout 60 python3 "$L/scripts/bench_torch.py" --out "$R/torch$1/decode" --rep-ms 100 --only decode >> "$R/torch$1.log" 2>&1; echo "torch$1 decode rc=$?"
}
fwd_durations() {
  local t="$1" label="$2"; shift 2; unpack "$t" || return 1
  for row in "$@"; do
    (cd "/tmp/$t" && timeout 90 ncu --metrics gpu__time_duration.sum -k regex:fattn_fwd --csv \
      bin/bench "cuda_fused_attn_bf16/$row\$" --bench --warm-up-time 0.1 --measurement-time 0.3 \
      --sample-size 10 --noplot > "$R/ncu_${label}_$row.csv" 2>"$R/ncu_${label}_$row.err")
    python3 - "$R/ncu_${label}_$row.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] == "gpu__time_duration.sum":
        d[r[4][:48]].append(float(r[-1].replace(",", "")))
for k, v in d.items():
    if len(v) > 50: print(sys.argv[1].split("/")[-1], k, len(v), "median", statistics.median(v))
PY
  done
}
gpu_tests() {
  local t="$1" tools="$2"; shift 2; unpack "$t" || return 1
  (cd "/tmp/$t" && head -3 COMMIT
   for test in "$@"; do
     timeout 240 bin/gpu "$test" --exact --nocapture > "$R/t_$test.log" 2>&1; echo "$test rc=$?"
     grep -hE "^gpu_|panicked" "$R/t_$test.log" | cut -c1-300
   done
   for tool in $tools; do
     timeout 150 compute-sanitizer --tool "$tool" bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
   done)
}
cuda_hunt() {  # PACK [SECONDS]: tests/panic_hunt.rs on CUDA (a synchronize after every call)
  unpack "$1" || return 1
  (cd "/tmp/$1" && head -1 COMMIT
   PANIC_HUNT_TRACE=1 PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=${N:-1500} \
     timeout "${2:-150}" bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/hunt.log" 2>&1
   echo "hunt rc=$?"; cp /tmp/panic_hunt_current "$R/" 2>/dev/null && echo "last call: $(cut -c1-300 /tmp/panic_hunt_current)"
   grep -v "<unknown>" "$R/hunt.log" | grep -nE "CUDA FAULT|PANICS|SUSPICIOUS|INTERNAL|ERRORS ON|SLOW|test result|total calls|panic outside" | cut -c1-300 | head -20
   seed=$(grep -oE "CUDA FAULT after .*seed [0-9]+" "$R/hunt.log" | grep -oE "[0-9]+$" | head -1)
   if [ -n "$seed" ]; then
     n=$(( seed >= 500000 ? seed - 500000 + 1 : seed - 1000 + 1 ))
     PANIC_HUNT_DEVICE=cuda PANIC_HUNT_SKIP_CATALOGS=1 PANIC_HUNT_N=$n timeout 120 \
       compute-sanitizer --tool memcheck --show-backtrace no bin/panic_hunt panic_hunt --nocapture --test-threads=1 > "$R/memcheck.log" 2>&1
     echo "memcheck rc=$?"; grep -E "Invalid|at fattn|ERROR SUMMARY" "$R/memcheck.log" | sort | uniq -c | head
   fi)
}
coldstart_stage() {  # PACK (sessions 52-53)
  DEVICE_RUN_WORK=/tmp/dr LIMIT_COLDSTART=60 bash "$L/scripts/device-run.sh" "$L/device-pack/h90-$1-9.tar.xz" "$R/dr" coldstart > "$R/coldstart_run.log" 2>&1
  echo "coldstart rc=$?"; grep -E "^== |^coldstart " "$R/coldstart_run.log" "$R/dr/coldstart.log" | cut -c1-250
}
sanitize_stage() {  # PACK: memcheck and racecheck of gpu_sanitizer_ (racecheck ~175 s on an H200)
  SANITIZE_FILTER=gpu_sanitizer_ DEVICE_RUN_WORK=/tmp/dr bash "$L/scripts/device-run.sh" "$L/device-pack/h90-$1-9.tar.xz" "$R/dr" sanitize > "$R/sanitize_run.log" 2>&1
  echo "sanitize stage rc=$?"; grep -E "^== " "$R/sanitize_run.log" | cut -c1-250
  grep -E "^test result|SUMMARY|exit .* after" "$R/dr/sanitize.log" | cut -c1-200
}
synccheck_stage() {  # PACK
  unpack "$1" || return 1
  (cd "/tmp/$1"
   timeout 100 compute-sanitizer --tool synccheck --error-exitcode 97 bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_sync_subset.log" 2>&1
   echo "synccheck subset rc=$?"; grep -E "SUMMARY|test result" "$R/san_sync_subset.log" | cut -c1-200 | tail -2
   FUSED_ATTN_NAIVE_ON_CPU=1 timeout 60 compute-sanitizer --tool synccheck --error-exitcode 97 --kernel-name kns=fattn bin/gpu gpu_hopper_multicast --exact --nocapture > "$R/san_sync_mc.log" 2>&1
   echo "synccheck multicast rc=$?"; grep -E "SUMMARY|test result" "$R/san_sync_mc.log" | cut -c1-200 | tail -2)
}
ncu_vs_cudnn() {  # PACK "KERNEL B H HKV SQ SK D CAUSAL ROW" ... (session 53 call 4)
  local t="$1"; shift; unpack "$t" || return 1
  local M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size"
  local keep="^  [a-zA-Z_].*\\(|gpu__|sm__|dram__|smsp__|launch__|ERR"
  for spec in "$@"; do
    set -- $spec
    local kn=$1 name=$9
    (cd "/tmp/$t" && timeout 80 ncu --clock-control none --metrics "$M" --kernel-name "regex:$kn" --launch-skip 20 --launch-count 3 \
       bin/bench "cuda_fused_attn_bf16/$name\$" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_ours_$name.txt" 2>&1)
    echo "== ncu ours $name rc=$?"; grep -E "$keep" "$R/ncu_ours_$name.txt" | head -30
    timeout 80 ncu --clock-control none --metrics "$M" --kernel-name regex:"fprop|flash|cudnn" --launch-skip 20 --launch-count 3 \
       python3 "$L/lab/results/s46-call6/cudnn_row.py" $2 $3 $4 $5 $6 $7 $8 0.2 > "$R/ncu_cudnn_$name.txt" 2>&1
    echo "== ncu cudnn $name rc=$?"; grep -E "$keep" "$R/ncu_cudnn_$name.txt" | head -30
  done
}
pooled_runs() {  # PACK [N] (session 58 calls 1 and 4 ran this body inline)
  local t="$1" n="${2:-3}"; unpack "$t" || return 1
  nvidia-smi --query-gpu=timestamp,temperature.gpu,power.draw,clocks.sm,clocks.mem,clocks_throttle_reasons.active --format=csv -lms 500 > "$R/smi.csv" 2>&1 &
  local smi=$!
  echo "warmup $(date +%s.%N)" >> "$R/marks.txt"; torch_both 0
  for k in $(seq "$n"); do
    echo "torch$k $(date +%s.%N)" >> "$R/marks.txt"; torch_both "$k"
    echo "ours$k $(date +%s.%N)" >> "$R/marks.txt"
    CRITERION_HOME=/tmp/crit-ours$k timeout 220 "/tmp/$t/bin/bench" cuda_fused_attn_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench$k.log" 2>&1
    echo "ours$k rc=$?"; medians /tmp/crit-ours$k > "$R/medians$k.txt"
  done
  echo "torch$((n + 1)) $(date +%s.%N)" >> "$R/marks.txt"; torch_both $((n + 1)); echo "end $(date +%s.%N)" >> "$R/marks.txt"
  kill "$smi"
  for k in $(seq "$n"); do
    mkdir -p "$R/t$k"; cp -r "$R/torch$k" "$R/t$k/torch1"; cp -r "$R/torch$((k + 1))" "$R/t$k/torch2"; cp "$R/medians$k.txt" "$R/t$k/medians.txt"
    python3 "$L/lab/results/s28-call3/table.py" "$R/t$k" > "$R/t$k/table.md" 2>&1
    echo "== table $k (torch $k, ours $k, torch $((k + 1)))"; tail -3 "$R/t$k/table.md"
  done
  python3 "$L/lab/results/s58-call1/pooled.py" "$R" "$n" > "$R/pooled.md" 2>&1; cat "$R/pooled.md"
}
