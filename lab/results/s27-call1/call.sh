# (envab: lab/decode/check_ab.sh since the end of session 27; this call ran the same function inline.)
# Session 27 call 1 (pack s27a = the masked d64 instance + the opt-in split of small grids):
# (a) gpu_hopper_prefill with the default rules (the `_masked` instances must run) and with the
#     opt-in `split` rule (small unmasked d64 grids split over two blocks per tile), memcheck of
#     the persistent cases; (b) same-call A/B, 3 rounds alternating: old default rules (base),
#     default (masked on), default + split, on the d64 rows; the 32×4096 decode with 2 splits;
#     (c) lab stamps (HEAD kernels, -DFATTN_LAB_STAMPS=5) of the small rows, d64 causal and
#     d128 2048; (d) ncu kernel durations of the small row, ours (base / split) and cuDNN's.
. lab/decode/check_ab.sh
BASE=small-grid,persistent,dynamic,wide,shift,streamk
SPLIT=small-grid,persistent,dynamic,wide,masked,shift,streamk,split
body() {
  gpu_info
  unpack s27a; head -3 /tmp/s27a/COMMIT
  cd /tmp/s27a
  timeout 240 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/t_hopper.log" 2>&1; echo "hopper rc=$?"
  FUSED_ATTN_SM90_TILE_RULES=$SPLIT timeout 240 bin/gpu gpu_hopper_prefill --exact --nocapture > "$R/t_hopper_split.log" 2>&1; echo "hopper split rc=$?"
  grep -hE "test result|panicked|cases|ran" "$R/t_hopper.log" "$R/t_hopper_split.log" | cut -c1-300
  cd "$L"
  envab s27a 'cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64|b16_h16_kv16_q2048_k2048_d64)' 3 FUSED_ATTN_SM90_TILE_RULES "base=$BASE masked=unset split=$SPLIT"
  envab s27a 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$' 3 FUSED_ATTN_DECODE_SPLITS "s1=unset s2=2"
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  for a in "1 8 8 512 64" "1 8 8 512 64 causal" "16 16 16 2048 64 causal" "16 16 16 2048 128"; do
    timeout 60 /tmp/st/lab_stamps $a > "$R/stamps_${a// /_}.txt" 2>&1; echo "stamps $a rc=$?"
  done
  cd /tmp/s27a
  for cfg in base split; do
    if [ $cfg = base ]; then rules=$BASE; else rules=$SPLIT; fi
    FUSED_ATTN_SM90_TILE_RULES=$rules timeout 90 ncu --metrics gpu__time_duration.sum -k regex:fattn --csv \
      bin/bench 'cuda_fused_attn_bf16/b1_h8_kv8_q512_k512_d64$' --bench --warm-up-time 0.1 --measurement-time 0.3 \
      --sample-size 10 --noplot > "$R/ncu_ours_$cfg.csv" 2>"$R/ncu_ours_$cfg.err"; echo "ncu ours $cfg rc=$?"
    python3 - "$R/ncu_ours_$cfg.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] == "gpu__time_duration.sum":
        d[r[4][:48]].append(float(r[-1].replace(",", "")))
for k, v in d.items(): print(sys.argv[1].split("/")[-1], k, len(v), "median", statistics.median(v), r[-2] if False else "")
PY
  done
  cat > /tmp/cudnn_small.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
for causal in (sys.argv[1] == "1",):
    q, k, v = (torch.randn(1, 8, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel(be):
            for _ in range(20): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.cuda.synchronize()
PY
  for c in 0 1; do
  timeout 120 ncu --metrics gpu__time_duration.sum --csv python3 /tmp/cudnn_small.py $c > "$R/ncu_torch_small$c.csv" 2>"$R/ncu_torch_small$c.err"; echo "ncu torch causal=$c rc=$?"
  python3 - "$R/ncu_torch_small$c.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) > 14 and r[-3] == "gpu__time_duration.sum":
        d[r[4][:60]].append(float(r[-1].replace(",", "")))
for k, v in d.items(): print("torch", sys.argv[1][-5:], k, len(v), "median", statistics.median(v))
PY
  done
  cd "$L"
}
archived body
