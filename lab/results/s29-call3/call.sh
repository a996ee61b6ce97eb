# Session 29 call 3: the profiles behind issue 14's short rows (session 28's table, 10 of 19):
# ncu sections SpeedOfLight, LaunchStats, Occupancy, ComputeWorkloadAnalysis and
# MemoryWorkloadAnalysis of our kernel (the bench binary of pack s29b = HEAD's kernels) and of
# cuDNN's (torch 2.11 SDPA, CUDNN_ATTENTION), one launch each after warm-up, on every row short
# of 1.0x cuDNN: the small rows, d64 2048 causal, d128 2048, d256 causal, GQA 4096, decode 32x4096.
. lab/decode/check_ab.sh
SECT="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
ROWS="1,8,8,512,512,64,0 1,8,8,512,512,64,1 16,16,16,2048,2048,64,1 16,16,16,2048,2048,128,0 16,16,16,2048,2048,256,1 4,32,4,4096,4096,128,0 32,32,8,1,4096,128,0"
body() {
  gpu_info
  unpack s29b
  cat > /tmp/cudnn_row.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
b, h, hkv, sq, sk, d, c = map(int, sys.argv[1].split(","))
q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
kw = {"is_causal": bool(c)}
if h != hkv: kw["enable_gqa"] = True
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(8): F.scaled_dot_product_attention(q, k, v, **kw)
torch.cuda.synchronize()
PY
  for row in $ROWS; do
    IFS=, read -r B H HKV SQ SK D C <<<"$row"
    name="b${B}_h${H}_kv${HKV}_q${SQ}_k${SK}_d${D}$([ "$C" = 1 ] && echo _causal)"
    (cd /tmp/s29b && timeout 120 ncu $SECT --csv --page details -k regex:fattn --launch-skip 6 --launch-count 3 \
      bin/bench "cuda_fused_attn_bf16/$name\$" --bench --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 --noplot \
      > "$R/ours_$name.csv" 2> "$R/ours_$name.err"); echo "ours $name rc=$?"
    timeout 120 ncu $SECT --csv --page details -k regex:'sdpa|cudnn|fmha|flash|fprop' --launch-skip 5 --launch-count 1 \
      python3 /tmp/cudnn_row.py "$row" > "$R/cudnn_$name.csv" 2> "$R/cudnn_$name.err"; echo "cudnn $name rc=$?"
  done
  gzip "$R"/*.csv
  cd "$L"
}
archived body
