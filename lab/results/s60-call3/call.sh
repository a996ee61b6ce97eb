# Session 60, call 3 (pack s60b + two fwd_sm90 images of this commit's kernel source, loaded
# through FUSED_ATTN_LAB_KERNEL_IMAGES; an H200): the conditional rescale on the plain d128
# instance. Calls 1-2 (SASS stall sampling): the plain d128 loop is 474 instructions per key
# block per warp, 66 of them FMUL (64 the O rescale of every block); the instance rescales
# every block since session 30 measured the conditional rescale level to +0.6% on it, before
# Q in registers (55), the multicast (49-51) and the energy reading of sessions 49-55 (the
# rows run at the 700 W cap: fewer instructions per tile pay through the clock).
# `base`: the default build (FATTN_SM90_LAB_D128_COND_RESCALE=0, the shipped code); `cond`:
# =1. First the prefill tests with `cond` (the rescale's skip must keep results), then 3
# rounds alternating on the plain d128 instance's rows (2048, 4096, GQA 8:1, each with causal;
# 16k causal), nvidia-smi sampled meanwhile.
# PREDICTION: cond -0.3 to -1.0% on the unmasked rows (the warp-uniform skip holds on most
# blocks past the first few), level on the causal ones (shorter rows of blocks).
. lab/decode/check_ab.sh
P=s60b
BASE="FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-base.fatbin"
COND="FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=$L/device-pack/fwd_sm90-cond.fatbin"
ROWS='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128|b1_h32_kv32_q16384_k16384_d128_causal)'
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  (cd /tmp/$P && for t in gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_lse; do
     env "$COND" timeout 150 bin/gpu $t --exact > "$R/test_$t.log" 2>&1; echo "cond $t rc=$? $(grep -E '^test result' "$R/test_$t.log")"
   done)
  grep -h -i "lab image\|kernel image" "$R"/test_*.log | sort | uniq -c | head -5
  echo "tests done $(( $(date +%s) - S0 )) s"
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu --format=csv -lms 500 > "$R/smi.csv" 2>&1 &
  local smi=$!
  cfg_rounds 3 "base $P $ROWS $BASE" "cond $P $ROWS $COND"
  kill $smi
  grep -h -i "image" /tmp/cfg_*_1.log | sort | uniq -c | head -5
  python3 - "$R/cfg_medians.txt" <<'PY'
import sys, collections
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    cfg, rnd, name, us = f[0][4:], f[1], f[2], float(f[3])
    rows[name][cfg].append(us)
for name, c in rows.items():
    b, x = c.get("base", []), c.get("cond", [])
    if b and x:
        mb, mx = sorted(b)[len(b) // 2], sorted(x)[len(x) // 2]
        print(f"{name:60s} base {' '.join(f'{v:.1f}' for v in b)} | cond {' '.join(f'{v:.1f}' for v in x)} | {100 * (mx / mb - 1):+.2f}%")
PY
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
