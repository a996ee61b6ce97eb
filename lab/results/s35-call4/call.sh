# Session 35 call 4: when do the 32x4096 decode's warps end? Lab pack s35st (branch
# s35-decode-stamps: main's kernels plus a globaltimer stamp per warp at start and end, and the SM,
# printed for the launches that start in one of every 64 ms windows). The 8x8192 row too.
# Call 5 ran the same body on pack s35st2 for 2 s (PACK=s35st2 MT=2, lab/results/s35-call5/).
. lab/decode/check_ab.sh
PACK="${PACK:-s35st}" MT="${MT:-1}"
body() {
  gpu_info
  unpack "$PACK"
  for row in b32_h32_kv8_q1_k4096_d128 b8_h32_kv8_q1_k8192_d128; do
    (cd "/tmp/$PACK" && timeout 60 bin/bench "cuda_fused_attn_bf16/$row" --bench --warm-up-time 0.5 \
      --measurement-time "$MT" --sample-size 10 --noplot > "$R/stamps_$row.txt" 2>&1; echo "$row rc=$?")
    grep -c STAMP "$R/stamps_$row.txt"
  done
  gzip "$R"/stamps_*.txt
}
archived body
