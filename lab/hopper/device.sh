#!/usr/bin/env bash
# The Hopper kernel's device check (kernels/fwd_sm90.cu): correctness on both kernel
# generations, sanitizers, and a same-run bench of Hopper vs sm_80 vs torch SDPA.
#   device tool: carry ["device-pack/h90.tar.xz"], command: bash lab/hopper/device.sh STEPS...
# STEPS: smoke (8 cases and the neighbours test, 60 s each: catches a hang early), hopper sweep
# memcheck racecheck synccheck bench torch (default: hopper..torch; BENCH_KINDS picks the
# kernel settings the bench runs, default "auto sm80"); packed
# batches (the `_varlen` entry): hvarlen (its tests), vmemcheck vracecheck vsynccheck, vbench
# (criterion cuda_varlen/cuda_paged on both generations, then torch's FA2 varlen); sgbench
# (the query-tile rules by value, alternating: SG_VARIANTS, SG_FILTER picks the rows);
# dsbench (decode split counts, alternating: DS_VARIANTS, DS_FILTER); torchd (torch's decode rows);
# ncusrc (per-instruction stall samples of the launches NCU_SRC picks).
# The pack: scripts/device-pack.sh output without the train/llama/bench_cpu binaries.
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACK="${PACK:-device-pack/h90.tar.xz}"
W=/tmp/h90; R="$OUT/r"; mkdir -p "$W" "$R"
tar -xJf "$PACK" -C "$W" || exit 1
cd "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$R/gpu.txt"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(hopper sweep memcheck racecheck synccheck bench torch)
# shellcheck source=lab/medians.sh
. "$LAB/medians.sh"
for s in "${steps[@]}"; do
  t0=$SECONDS
  case "$s" in
    hopper) timeout 300 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/hopper.log" 2>&1
            if [ $? -eq 124 ]; then echo "hopper timed out: a hang; stopping" >> "$R/steps.txt"; break; fi ;;
    ncu) # The bench makes one untimed call per row, in table order, before its filter applies:
         # skip that many Hopper launches to profile the row asked for.
         for pick in "1 b16_h16_kv16_q2048_k2048_d64$" "2 b16_h16_kv16_q2048_k2048_d64_causal" "3 b16_h16_kv16_q2048_k2048_d128$"; do
           set -- $pick
           timeout 200 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
             --section Occupancy --section LaunchStats -k regex:_sm90 --launch-skip "$1" -c 1 bin/bench \
             "cuda_fused_attn_bf16/$2" --bench --warm-up-time 1 --measurement-time 1 --sample-size 10 --noplot
         done > "$R/ncu.log" 2>&1
         grep -E "fattn_fwd|Duration|Throughput|Pipe|Issue Slots|Stall|Warp Cycles|Registers|Achieved Occ|Eligible" "$R/ncu.log" | head -90 ;;
    ncusrc) # Per-instruction stall samples (SASS, --set full) of the launches NCU_SRC picks: entries
      # "TAG KERNEL_REGEX SKIP ROW" separated by ';'. SKIP counts earlier launches of that kernel
      # (since session 60 the bench's untimed sizing calls are those of the filtered rows only).
      # Summaries: python3 lab/tools/sass_stalls.py r/sass_TAG.csv
      IFS=';' read -ra picks <<< "${NCU_SRC:-d128_2048 ^fattn_fwd_bf16_d128_sm90$ 0 b16_h16_kv16_q2048_k2048_d128$}"
      for pick in "${picks[@]}"; do
        set -- $pick
        timeout 200 ncu --set full --import-source no -k "regex:$2" --launch-skip "$3" -c 1 -f -o "$W/src_$1" bin/bench \
          "cuda_fused_attn_bf16/$4" --bench --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10 --noplot \
          > "$R/ncusrc_run_$1.log" 2>&1
        ncu -i "$W/src_$1.ncu-rep" --page details > "$R/ncusrc_$1.txt" 2>&1
        ncu -i "$W/src_$1.ncu-rep" --page source --csv --print-source sass > "$R/sass_$1.csv" 2>&1
        grep -E "^  fattn|Duration|Warp Cycles Per Issued|Registers Per|Issue Slots Busy" "$R/ncusrc_$1.txt" | sed "s/^/$1: /" | head -8
      done ;;
    oracle) timeout 300 python3 scripts/torch_oracle.py --out "$W/oracle" > "$R/oracle.log" 2>&1
            FUSED_ATTN_ORACLE_DIR="$W/oracle" timeout 200 bin/gpu gpu_torch_oracle --exact --nocapture >> "$R/oracle.log" 2>&1
            grep -E "cases|test result|SKIPPED|panicked" "$R/oracle.log" | head ;;
    varlen) timeout 200 bin/gpu gpu_varlen_matches_dense_per_sequence --exact --nocapture > "$R/varlen.log" 2>&1
            grep -E "bit-identical|test result|panicked" "$R/varlen.log" ;;
    all) timeout 500 bin/gpu --nocapture --test-threads=1 --skip gpu_torch_oracle > "$R/all.log" 2>&1
         grep -E "^test result|FAILED|SKIPPED|panicked" "$R/all.log" | head -20 ;;
    smoke) # A hang (a barrier protocol gone wrong) shows here within a minute, not after 300 s.
           FUSED_ATTN_HOPPER_CASES=8 timeout 60 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/smoke.log" 2>&1
           rc1=$?
           timeout 60 bin/gpu gpu_hopper_varlen_neighbours_stay_out --exact --nocapture >> "$R/smoke.log" 2>&1
           rc2=$?
           grep -E "cases|batches|test result|panicked" "$R/smoke.log"
           if [ $rc1 -eq 124 ] || [ $rc2 -eq 124 ]; then echo "smoke timed out: a hang; stopping" | tee -a "$R/steps.txt"; break; fi ;;
    hvarlen) for t in gpu_hopper_varlen_neighbours_stay_out gpu_hopper_varlen gpu_varlen_matches_dense_per_sequence \
                    gpu_varlen_sweep_bf16 gpu_varlen_sweep_f16 gpu_varlen_paged_decode gpu_sanitizer_varlen; do
               timeout 150 bin/gpu "$t" --exact --nocapture
               if [ $? -eq 124 ]; then echo "$t timed out: a hang; stopping"; break; fi
             done > "$R/hvarlen.log" 2>&1
             grep -E "^gpu_.*(cases|batches|bit-identical)|test result|panicked|FAIL" "$R/hvarlen.log" | head -40 ;;
    vmemcheck|vracecheck|vsynccheck)
      timeout 300 compute-sanitizer --tool "${s#v}" bin/gpu gpu_sanitizer_hopper_varlen --exact \
        --nocapture > "$R/$s.log" 2>&1
      grep -E "SUMMARY|test result|cases" "$R/$s.log" | tail -3 ;;
    vbench)
      for k in auto sm80; do
        FUSED_ATTN_CUDA_KERNELS=$k CRITERION_HOME="$W/vcrit-$k" timeout 300 bin/bench "${VBENCH_FILTER:-cuda_varlen}" --bench \
          --warm-up-time 1 --measurement-time 3 --sample-size 10 --noplot > "$R/vbench_$k.log" 2>&1
        medians "$W/vcrit-$k" > "$R/vmedians_$k.txt"
        cat "$R/vmedians_$k.txt"
      done
      timeout 300 python3 scripts/bench_torch_varlen.py --out "$R" > "$R/torch_varlen.log" 2>&1
      tail -12 "$R/torch_varlen.log" ;;
    sweep) timeout 300 bin/gpu gpu_sweep_bf16 --exact --nocapture > "$R/sweep_bf16.log" 2>&1
           timeout 300 bin/gpu gpu_sweep_f16 --exact --nocapture > "$R/sweep_f16.log" 2>&1 ;;
    memcheck|racecheck|synccheck)
      FUSED_ATTN_HOPPER_CASES=24 timeout 300 compute-sanitizer --tool "$s" bin/gpu gpu_hopper_prefill --exact --nocapture \
        > "$R/$s.log" 2>&1
      grep -E "SUMMARY|test result" "$R/$s.log" | tail -2 ;;
    bench)
      for k in ${BENCH_KINDS:-auto sm80}; do
        FUSED_ATTN_CUDA_KERNELS=$k CRITERION_HOME="$W/crit-$k" timeout 400 bin/bench cuda_fused_attn_bf16 --bench \
          --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench_$k.log" 2>&1
        medians "$W/crit-$k" > "$R/medians_$k.txt"
      done ;;
    sgbench) # The query-tile rules (src/cuda/prefill_sm90.rs) by FUSED_ATTN_SM90_TILE_RULES values
      # (SG_VARIANTS, default "small-grid none"), alternating, 3 rounds.
      for r in 1 2 3; do
        for sg in ${SG_VARIANTS:-small-grid none}; do
          FUSED_ATTN_SM90_TILE_RULES=$sg CRITERION_HOME="$W/sg-$sg-$r" timeout 200 bin/bench \
            "${SG_FILTER:-cuda_fused_attn_bf16/b1_h8_kv8_q512}" --bench --warm-up-time 1 --measurement-time 2 \
            --sample-size 10 --noplot > "$R/sgbench_${sg}_$r.log" 2>&1
          medians "$W/sg-$sg-$r" | sed "s/^/rules=$sg round=$r /" | tee -a "$R/sgbench_medians.txt"
        done
      done ;;
    dsbench) # Decode splits (src/cuda/heuristics.rs split_keys) by FUSED_ATTN_DECODE_SPLITS values
      # (DS_VARIANTS, default "auto 4 8 12 24"; auto = the rule), alternating, 3 rounds.
      for r in 1 2 3; do
        for ds in ${DS_VARIANTS:-auto 4 8 12 24}; do
          if [ "$ds" = auto ]; then unset FUSED_ATTN_DECODE_SPLITS; else export FUSED_ATTN_DECODE_SPLITS=$ds; fi
          CRITERION_HOME="$W/ds-$ds-$r" timeout 200 bin/bench "${DS_FILTER:-cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048}" \
            --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/dsbench_${ds}_$r.log" 2>&1
          medians "$W/ds-$ds-$r" | sed "s/^/splits=$ds round=$r /" | tee -a "$R/dsbench_medians.txt"
        done
      done
      unset FUSED_ATTN_DECODE_SPLITS ;;
    coldstart) for f in prefill decode backward; do CUDA_CACHE_DISABLE=1 timeout 120 bin/coldstart $f; done > "$R/coldstart.log" 2>&1
               grep COLDSTART "$R/coldstart.log" ;;
    torch) timeout 400 python3 scripts/bench_torch.py --out "$R" --rep-ms 100 --only prefill > "$R/torch.log" 2>&1 ;;
    torchd) mkdir -p "$R/decode"
            timeout 400 python3 scripts/bench_torch.py --out "$R/decode" --rep-ms 100 --only decode > "$R/torchd.log" 2>&1 ;;
  esac
  echo "$s rc=$? $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
done
tar -czf "$OUT/r.tgz" -C "$OUT" r
