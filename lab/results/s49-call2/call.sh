# Session 49, call 2: do the L2-to-SM bytes of K/V bound the d128 rows? A timing-only probe
# (wrong results): FATTN_SM90_LAB_KV_PANELS=1 (kernels/fwd_sm90.cu) makes the producer load
# only the first 64-column panel of each K and V tile, so a d128 tile's K/V bytes from L2
# halve (d256: a quarter; d64 tiles are one panel: the control, which must tie). Image
# device-pack/fwd_sm90-kvp1.fatbin (lab/fatbin-variant.sh fwd_sm90 OUT
# -DFATTN_SM90_LAB_KV_PANELS=1) through FUSED_ATTN_LAB_KERNEL_IMAGES on pack s49m; the default
# build's SASS is unchanged by the macro (cuobjdump of both images: same md5).
# Arithmetic: a d128 CTA reads 64 KiB of K/V per 128-key block, ~1.86 µs at 600 TF/s, so the
# GPU pulls ~4.6 TB/s from L2 on the d128 2048 row; the rows at the 700 W cap (session 46:
# 1665-1695 MHz) pay for those bytes in power too.
# PREDICTION: if cluster multicast of K/V (never tried here) can pay, kvp1 runs the d128 rows
# 2-5% faster, with a higher SM clock under the cap; d64 ties (control). If kvp1 ties on d128
# too, L2 traffic is not a limiter and multicast is dropped.
# Then ncu (clocks free) of the d128 2048 kernel, base and kvp1: duration, SM clock, tensor
# pipe, L2 throughput.
. lab/decode/check_ab.sh
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> "$R/marks.txt"; }
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49m
  I="$L/device-pack"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$R/clocks.csv" 2> "$R/smi.err" &
  MON=$!
  envab s49m 'cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d(64|128)(_causal)?|b16_h16_kv16_q2048_k2048_d256|b4_h32_kv32_q4096_k4096_d128)$' 2 \
    FUSED_ATTN_LAB_KERNEL_IMAGES "base=unset kvp1=fwd_sm90=$I/fwd_sm90-kvp1.fatbin"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  for cfg in base kvp1 base kvp1; do
    if [ $cfg = base ]; then unset FUSED_ATTN_LAB_KERNEL_IMAGES; else export FUSED_ATTN_LAB_KERNEL_IMAGES="fwd_sm90=$I/fwd_sm90-kvp1.fatbin"; fi
    for row in b16_h16_kv16_q2048_k2048_d128 b4_h32_kv32_q4096_k4096_d128; do
      mark start "$cfg $row $(date +%s%N)"
      (cd /tmp/s49m && timeout 60 bin/bench "cuda_fused_attn_bf16/$row\$" --bench --warm-up-time 1 --measurement-time 3 --sample-size 10 --noplot > /dev/null 2>&1)
      mark end "$cfg $row $(date +%s%N)"
    done
  done
  unset FUSED_ATTN_LAB_KERNEL_IMAGES
  kill $MON
  # one label per run: the start and end marks carry the same label
  python3 - "$R" <<'PY'
import sys
r = sys.argv[1]; out = []; last = {}
for line in open(f"{r}/marks.txt"):
    ts, kind, cfg, row, ns = line.split()
    key = f"{cfg} {row}"
    if kind == "start": last[key] = ns
    out.append(f"{ts} {kind} {key} #{last[key]}\n")
open(f"{r}/marks2.txt", "w").writelines(out)
PY
  mv "$R/marks.txt" "$R/marks_raw.txt"; mv "$R/marks2.txt" "$R/marks.txt"
  python3 "$L/lab/results/s46-call6/clocks.py" "$R"
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,lts__t_sector_hit_rate.pct,dram__bytes_read.sum.per_second"
  for cfg in base kvp1; do
    if [ $cfg = base ]; then unset FUSED_ATTN_LAB_KERNEL_IMAGES; else export FUSED_ATTN_LAB_KERNEL_IMAGES="fwd_sm90=$I/fwd_sm90-kvp1.fatbin"; fi
    (cd /tmp/s49m && timeout 100 ncu --clock-control none --metrics "$M" --kernel-name regex:fattn_fwd_bf16_d128 --launch-skip 5 --launch-count 2 \
       bin/bench 'cuda_fused_attn_bf16/b16_h16_kv16_q2048_k2048_d128$' --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > "$R/ncu_$cfg.txt" 2>&1)
    echo "== ncu $cfg"; grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|smsp__|lts__|dram__|ERR" "$R/ncu_$cfg.txt" | head -24
  done
  unset FUSED_ATTN_LAB_KERNEL_IMAGES
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
