# Session 44 call 1: does the L2 flush's kernel move the rows? Our bench flushed with candle's
# zero_set (const_set_f32: 4-byte stores, 1024-thread blocks) while torch's do_bench flushes
# with torch's zero_ (a vectorized kernel). Pack s44a (main + the flush switch; kernels as
# session 40's). 1) ncu of torch's zero_ on a 256 MiB int32 buffer, of candle's const_set and
# of our PTX flush in the bench (grid, block, store instructions). 2) Our short rows under
# FUSED_ATTN_BENCH_FLUSH=candle / torch, 2 rounds alternating. 3) torch's same rows under
# --flush torch / candle, 2 rounds alternating.
# Prediction (session 36 call 8 measured 132.8 against 135.8 µs on the 32x4096 decode with
# "a kernel" flush against the default): our decode rows 1-2% faster under the torch flush,
# the prefill rows unchanged; torch's rows move the same way under the same flush, or not.
. lab/decode/check_ab.sh
ROWS='cuda_fused_attn_bf16/(b1_h8_kv8_q512_k512_d64|b16_h16_kv16_q2048_k2048_d128$|b16_h16_kv16_q2048_k2048_d64_causal|b[0-9]+_h32_kv8_q[14]_k)'
body() {
  gpu_info
  unpack s44a
  cat > /tmp/zero.py <<'PY'
import torch
c = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
for _ in range(3): c.zero_()
torch.cuda.synchronize()
PY
  M=launch__grid_size,launch__block_size,smsp__inst_executed_op_global_st.sum,gpu__time_duration.sum
  timeout 60 ncu --metrics $M python3 /tmp/zero.py > "$R/ncu_torch_zero.txt" 2>&1; echo "ncu torch rc=$?"
  grep -E "Kernel|elementwise|launch__|inst_exec|duration" "$R/ncu_torch_zero.txt" | head -16
  for f in torch candle; do
    (cd /tmp/s44a && FUSED_ATTN_BENCH_FLUSH=$f timeout 60 ncu --metrics $M -k regex:'fattn_bench_flush|const_set' -c 3 \
      bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$' --bench --warm-up-time 0.1 --measurement-time 0.2 \
      --sample-size 10 --noplot > "$R/ncu_flush_$f.txt" 2>&1); echo "ncu $f rc=$?"
    grep -E "fattn_bench_flush|const_set|launch__|inst_exec|duration" "$R/ncu_flush_$f.txt" | head -10
  done
  envab s44a "$ROWS" 2 FUSED_ATTN_BENCH_FLUSH "candle=candle torch=torch"
  for r in 1 2; do
    for f in $( ((r == 1)) && echo "torch candle" || echo "candle torch"); do
      mkdir -p "$R/torch_${f}_$r"
      timeout 150 python3 "$L/scripts/bench_torch.py" --out "$R/torch_${f}_$r" --rep-ms 100 --flush $f \
        --rows 0,1,3,4,14,15,16,17,18 > "$R/torch_${f}_$r.log" 2>&1; echo "torch $f $r rc=$?"
      grep -E "^  (prefill|decode)" "$R/torch_${f}_$r.log" | grep cudnn | sed "s/^/$f $r /"
    done
  done
}
archived body
