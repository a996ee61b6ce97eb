# Session 50, call 4: host-side switches on the four rows still short of cuDNN in call 3
# (pack s49fb: main's bench, bench only), 3 rounds alternating (reversed on even rounds):
#  - the unmasked plain-d128 rows (2048, 4096, GQA 8:1; 0.969-0.995x cuDNN): base; `wide`
#    (FUSED_ATTN_SM90_WIDE_PADDING=1.04: the 176-key instance, which lost 1.0-2.3% in session
#    24, before either had K/V multicast); `notail` (the last round whole, not in pieces; the
#    tail split was tuned before multicast paired the CTAs).
#  - decode (32,32,8,1,4096,128) (0.987-0.994x): the split rule's 2 splits against
#    FUSED_ATTN_DECODE_SPLITS=1, 3 and 4.
# PREDICTION: wide still 1-2% slower at 2048 (3% padding), within 1% at 4096; notail within
# ±0.5%; decode: 1 split slower (256 blocks on 132 SMs), 3-4 within 1% of 2.
. lab/decode/check_ab.sh
NOTAIL=dynamic,lightest-last,multicast,pairs,persistent,shift,small-grid,streamk,wide
P='cuda_fused_attn_bf16/(b16_h16_kv16_q2048_k2048_d128|b4_h32_kv32_q4096_k4096_d128|b4_h32_kv4_q4096_k4096_d128)$'
D='cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$'
body() {
  S0=$(date +%s)
  gpu_info
  unpack s49fb
  cfg_rounds 3 "base s49fb $P" "wide s49fb $P FUSED_ATTN_SM90_WIDE_PADDING=1.04" "notail s49fb $P FUSED_ATTN_SM90_TILE_RULES=$NOTAIL" \
    "dbase s49fb $D" "s1 s49fb $D FUSED_ATTN_DECODE_SPLITS=1" "s3 s49fb $D FUSED_ATTN_DECODE_SPLITS=3" "s4 s49fb $D FUSED_ATTN_DECODE_SPLITS=4" > /dev/null
  python3 - "$R/cfg_medians.txt" <<'PY'
import re, sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"cfg=(\S+) round=\d+ cuda_fused_attn_bf16/(\S+) ([\d.]+) us", line)
    if m: d[(m.group(2), m.group(1))].append(float(m.group(3)))
rows = sorted({r for r, _ in d})
for r in rows:
    cfgs = [c for (rr, c) in d if rr == r]
    base = "dbase" if "dbase" in cfgs else "base"
    b = sorted(d[(r, base)])[len(d[(r, base)]) // 2]
    print(r, " | ".join(f"{c} {' '.join(f'{x:.1f}' for x in d[(r, c)])} ({sorted(d[(r, c)])[len(d[(r, c)]) // 2] / b:.3f})" for c in cfgs))
PY
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
