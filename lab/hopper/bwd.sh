#!/usr/bin/env bash
# The Hopper backward's device check (kernels/bwd_sm90.cu): correctness on both kernel
# generations, the gradient sweeps on the default kernels, sanitizers, and a same-run bench
# of the Hopper main kernel vs the sm_80 one vs torch SDPA's FA2 and cuDNN backwards.
#   device tool: carry ["device-pack"], command: PACK=device-pack/h90.tar.xz bash lab/hopper/bwd.sh STEPS...
# STEPS (in order given): smoke (8 cases, 90 s: catches a barrier hang), hbwd (gpu_hopper_backward,
# 160 cases × 2 generations), sweeps (gpu_grad_sweep_bf16/f16, gpu_lse), memcheck racecheck
# synccheck (12 cases under compute-sanitizer), bench (criterion cuda_bwd_fused_bf16 with the
# default kernels and with FUSED_ATTN_CUDA_KERNELS=sm80; BENCH_KINDS picks), abench (EXTRA's
# bench binaries), torch (scripts/bench_torch_bwd.py),
# ncu (the d128 and d64 rows' Hopper main kernel).
set -uo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACK="${PACK:-device-pack/h90.tar.xz}"
W=/tmp/hbwd; R="$OUT/r"; mkdir -p "$W" "$R"
tar -xJf "$PACK" -C "$W" || exit 1
# EXTRA: a second pack holding bin/bench_<tag> binaries (another build of the kernel), timed by
# the `abench` step in the same call.
[ -n "${EXTRA:-}" ] && { tar -xJf "$EXTRA" -C "$W" || exit 1; }
cd "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$R/gpu.txt"
# shellcheck source=lab/medians.sh
. "$LAB/medians.sh"
for s in "$@"; do
  t0=$SECONDS
  case "$s" in
    smoke) FUSED_ATTN_HOPPER_CASES=8 timeout 90 bin/gpu gpu_hopper_backward --exact --nocapture > "$R/smoke.log" 2>&1
           rc=$?
           grep -E "cases|FAIL|test result|panicked|SKIPPED" "$R/smoke.log" | head -20
           if [ $rc -eq 124 ]; then echo "smoke timed out: a hang; stopping" | tee -a "$R/steps.txt"; break; fi
           if [ $rc -ne 0 ]; then echo "smoke failed; stopping" | tee -a "$R/steps.txt"; break; fi ;;
    hbwd) timeout 400 bin/gpu gpu_hopper_backward --exact --nocapture > "$R/hbwd.log" 2>&1
          grep -E "cases|test result|panicked" "$R/hbwd.log"; grep -c "FAIL" "$R/hbwd.log" ;;
    sweeps) for t in gpu_grad_sweep_bf16 gpu_grad_sweep_f16 gpu_lse gpu_sanitizer_subset; do
              timeout 300 bin/gpu "$t" --exact --nocapture
            done > "$R/sweeps.log" 2>&1
            grep -E "^test result|failed|passed|panicked" "$R/sweeps.log" | head -20 ;;
    memcheck|racecheck|synccheck)
      FUSED_ATTN_HOPPER_CASES=12 timeout 300 compute-sanitizer --tool "$s" bin/gpu gpu_hopper_backward --exact \
        --nocapture > "$R/$s.log" 2>&1
      grep -E "SUMMARY|test result|cases" "$R/$s.log" | tail -3 ;;
    bench)
      for k in ${BENCH_KINDS:-auto sm80}; do
        FUSED_ATTN_CUDA_KERNELS=$k CRITERION_HOME="$W/crit-$k" timeout 400 bin/bench cuda_bwd_fused_bf16 --bench \
          --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench_$k.log" 2>&1
        medians "$W/crit-$k" > "$R/medians_$k.txt"
        cat "$R/medians_$k.txt"
      done ;;
    abench) for b in bin/bench_*; do
              tag=${b#bin/bench_}
              CRITERION_HOME="$W/crit-$tag" timeout 300 "$b" "${ABENCH_FILTER:-cuda_bwd_fused_bf16}" --bench \
                --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/bench_$tag.log" 2>&1
              medians "$W/crit-$tag" > "$R/medians_$tag.txt"
              cat "$R/medians_$tag.txt"
            done ;;
    torch) timeout 400 python3 scripts/bench_torch_bwd.py --out "$R" > "$R/torch.log" 2>&1
           cat "$R/bench_torch_bwd.md" 2>/dev/null | head -30 ;;
    ncu) M=smsp__inst_executed.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
         for st in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait lg_throttle membar sleeping dispatch_stall selected; do
           M="$M,smsp__average_warps_issue_stalled_${st}_per_issue_active.ratio"
         done
         for row in "b16_h16_kv16_q2048_k2048_d128$" "b16_h16_kv16_q2048_k2048_d64$"; do
           for b in bin/bench ${NCU_EXTRA:-}; do
           echo "== $b $row"
           timeout 200 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
             --section Occupancy --section LaunchStats --metrics "$M" -k regex:fattn_bwd_bf16_d.*_sm90 -c 1 "$b" \
             "cuda_bwd_fused_bf16/$row" --bench --warm-up-time 0.1 --measurement-time 0.5 --sample-size 10 --noplot
           done
         done > "$R/ncu.log" 2>&1
         grep -E "^== |fattn_bwd|Duration|Throughput|Pipe|Issue Slots|Stall|Warp Cycles|Registers|Achieved Occ|Eligible|smsp__|sm__pipe|l1tex__" "$R/ncu.log" | head -120 ;;
  esac
  echo "$s rc=$? $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
done
tar -czf "$OUT/r.tgz" -C "$OUT" r
