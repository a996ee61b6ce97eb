# Session 46, call 7: is the d128 gap to cuDNN per tile? Call 6's ncu (same clocks): d128 2048
# ours 851.5-852.9 us with the tensor pipe active 71.4% of cycles, cuDNN's persistent
# sm90 kernel (132 x 384 threads, 64x128x128 tiles) 823.4-825.3 us at 73.9%. If a fixed cost
# per query tile (the two consumers' epilogues and first blocks coincide) makes the gap, our
# share of cuDNN's tensor-pipe activity rises with the keys per tile. ncu (clocks free) of the
# plain d128 instance at 2048, 4096 and 16384 keys (16k with the wide rule off:
# FUSED_ATTN_SM90_TILE_RULES without `wide`), the wide instance at 16k, and cuDNN at each.
# PREDICTION: ours / cuDNN pipe activity 0.966 at 2048, ~0.98 at 4096, >= 0.995 at 16k plain.
. lab/decode/check_ab.sh
H=lab/results/s46-call6
NOWIDE=small-grid,persistent,dynamic,tail,streamk,lightest-last,shift,pairs
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
show() { grep -E "^  [a-zA-Z_].*\(|gpu__|sm__|smsp__|ERR" "$1" | sed -E 's/ {20,}/  /' | head -16; }
body() {
  gpu_info
  unpack s46a
  for spec in "b16_h16_kv16_q2048_k2048_d128 plain" "b4_h32_kv32_q4096_k4096_d128 plain" \
              "b1_h32_kv32_q16384_k16384_d128 wide" "b1_h32_kv32_q16384_k16384_d128 nowide"; do
    set -- $spec
    if [ "$2" = nowide ]; then export FUSED_ATTN_SM90_TILE_RULES=$NOWIDE; else unset FUSED_ATTN_SM90_TILE_RULES; fi
    (cd /tmp/s46a && timeout 100 ncu --clock-control none --metrics "$M" --kernel-name regex:fattn_fwd --launch-skip 3 --launch-count 2 \
       bin/bench "cuda_fused_attn_bf16/$1\$" --bench --warm-up-time 0.2 --measurement-time 0.3 --sample-size 10 --noplot > "$R/ncu_ours_$1_$2.txt" 2>&1)
    echo "== ours $1 $2"; show "$R/ncu_ours_$1_$2.txt"
  done
  unset FUSED_ATTN_SM90_TILE_RULES
  for row in "16 16 16 2048 2048 128" "4 32 32 4096 4096 128" "1 32 32 16384 16384 128"; do
    tag=$(echo $row | tr ' ' _)
    timeout 100 ncu --clock-control none --metrics "$M" --kernel-name regex:"fprop" --launch-skip 3 --launch-count 2 \
       python3 $H/cudnn_row.py $row 0 0.1 > "$R/ncu_cudnn_$tag.txt" 2>&1
    echo "== cudnn $row"; show "$R/ncu_cudnn_$tag.txt"
  done
}
archived body
