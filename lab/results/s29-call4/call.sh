# Session 29 call 4: call 3's missing rows of ours (there the launch window caught other rows'
# untimed first calls): d256 causal, GQA 4096 and decode 32x4096 under the same ncu sections,
# launches picked by kernel name past the warm-up; and the small rows, ours and cuDNN's, with
# ncu's cache control off (L2 and instruction caches warm from the previous launch) against
# call 3's flushed runs: how much of our 16 µs against cuDNN's 11 is cold fetches.
. lab/decode/check_ab.sh
SECT="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
body() {
  gpu_info
  unpack s29b
  cd /tmp/s29b
  for spec in "b16_h16_kv16_q2048_k2048_d256_causal fattn_fwd_bf16_d256" "b4_h32_kv4_q4096_k4096_d128 fattn_fwd_bf16_d128_sm90" "b32_h32_kv8_q1_k4096_d128 fattn_decode|fattn_combine"; do
    set -- $spec
    timeout 150 ncu $SECT --csv --page details -k "regex:$2" --launch-skip 40 --launch-count 4 \
      bin/bench "cuda_fused_attn_bf16/$1\$" --bench --noplot > "$R/ours_$1.csv" 2> "$R/ours_$1.err"; echo "ours $1 rc=$?"
  done
  cat > /tmp/cudnn_row.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
b, h, hkv, sq, sk, d, c = map(int, sys.argv[1].split(","))
q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(12): F.scaled_dot_product_attention(q, k, v, is_causal=bool(c))
torch.cuda.synchronize()
PY
  for c in 0 1; do
    name="b1_h8_kv8_q512_k512_d64$([ $c = 1 ] && echo _causal)"
    timeout 120 ncu --cache-control none --metrics gpu__time_duration.sum,sm__cycles_active.max --csv -k regex:fattn --launch-skip 40 --launch-count 8 \
      bin/bench "cuda_fused_attn_bf16/$name\$" --bench --noplot > "$R/warm_ours_$name.csv" 2> "$R/warm_ours_$name.err"; echo "warm ours $name rc=$?"
    timeout 120 ncu --cache-control none --metrics gpu__time_duration.sum,sm__cycles_active.max --csv -k regex:'sdpa|cudnn|fprop' --launch-skip 3 --launch-count 8 \
      python3 /tmp/cudnn_row.py "1,8,8,512,512,64,$c" > "$R/warm_cudnn_$name.csv" 2> "$R/warm_cudnn_$name.err"; echo "warm cudnn $name rc=$?"
    timeout 120 ncu --cache-control all --metrics gpu__time_duration.sum,sm__cycles_active.max --csv -k regex:fattn --launch-skip 40 --launch-count 8 \
      bin/bench "cuda_fused_attn_bf16/$name\$" --bench --noplot > "$R/cold_ours_$name.csv" 2> "$R/cold_ours_$name.err"; echo "cold ours $name rc=$?"
    timeout 120 ncu --cache-control all --metrics gpu__time_duration.sum,sm__cycles_active.max --csv -k regex:'sdpa|cudnn|fprop' --launch-skip 3 --launch-count 8 \
      python3 /tmp/cudnn_row.py "1,8,8,512,512,64,$c" > "$R/cold_cudnn_$name.csv" 2> "$R/cold_cudnn_$name.err"; echo "cold cudnn $name rc=$?"
  done
  gzip "$R"/*.csv
  cd "$L"
}
archived body
