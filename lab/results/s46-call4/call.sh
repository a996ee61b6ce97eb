# Session 46, call 4: the crate's per-call cost outside the kernel. Call 2 (same call): the
# crate's bench 135.0 / 134.8 us on (32,32,8,1,4096) against the decode lab's 134.3 / 134.2
# with the same SASS, and 13.7 / 13.8 against 13.2 / 13.6 on (1,32,8,1,2048): ~0.5-0.7 us more
# per call through the crate. The bench drops each rep's output before its end event (as
# do_bench drops its function's result), and candle frees it with cuMemFreeAsync on the stream,
# a stream operation inside the window; torch's caching allocator frees on the host. Pack s46a
# (HEAD + FUSED_ATTN_BENCH_DROP, kernels' default PTX unchanged): the decode rows and the
# small prefill rows with the output dropped inside the window (default) and after the end
# event, 3 rounds alternating; torch's decode rows; the decode lab on K/V in torch, pool and
# cudaMalloc memory (stream_lab --placement, import fixed).
# PREDICTION: `after` is 0.3-0.7 us faster on every row (the free's stream operation), and
# the placement rows differ by < 0.5%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s46a; head -3 /tmp/s46a/COMMIT
  envab s46a 'cuda_fused_attn_bf16/(b[0-9]+_h32_kv8_q[14]_k|b1_h8_kv8_q512)' 3 FUSED_ATTN_BENCH_DROP "inside=inside after=after"
  python3 lab/results/s46-call4/summarize.py "$R/envab_medians.txt"
  torch_decode
  timeout 120 python3 lab/stream/stream_lab.py --lib .decode-lab/libstream_lab.so --placement .decode-lab/libdecode_lab.so > "$R/placement.txt" 2>&1
  echo "placement rc=$?"; cat "$R/placement.txt"
}
archived body
