# Session 43 call 4: the (1,32,8,1,2048,128) decode row, short of cuDNN in every call since
# session 23 (0.965 / 0.980 in call 3), profiled against cuDNN's on the H200 (session 23's ncu of
# this row was on older code). ncu at base clocks, caches flushed per kernel, 2 launches of each
# kernel: ours = the split kernel + the PDL combine (fattn_decode*, pack s43a = 100d185), cuDNN's
# split kernel + reduction through PyTorch SDPA (lab/decode/cudnn_decode.py 1 2048; its first 24
# kernels, unfiltered: the reduction's name is not known here).
# Prediction: the two split kernels within 5% of each other; the combine against cuDNN's
# reduction carries most of the 0.5 µs (ours ~9k cycles against ~6k in session 23).
. lab/decode/check_ab.sh
M=dram__bytes_read.sum.per_second,smsp__inst_executed.sum,sm__cycles_active.avg,sm__cycles_active.max,gpu__time_duration.sum,launch__grid_size,launch__block_size
for s in long_scoreboard barrier short_scoreboard wait no_instruction membar; do
  M="$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
body() {
  gpu_info
  unpack s43a
  cd /tmp/s43a
  timeout 150 ncu --metrics "$M" --csv --page raw -k regex:fattn_decode --launch-skip 20 --launch-count 4 \
    bin/bench 'cuda_fused_attn_bf16/b1_h32_kv8_q1_k2048_d128$' --bench --noplot --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 \
    > "$R/ours.csv" 2> "$R/ours.err"; echo "ours rc=$?"
  timeout 150 ncu --metrics "$M" --csv --page raw --launch-count 24 \
    python3 "$L/lab/decode/cudnn_decode.py" 1 2048 > "$R/cudnn.csv" 2> "$R/cudnn.err"; echo "cudnn rc=$?"
  grep -c . "$R/ours.csv" "$R/cudnn.csv"; tail -2 "$R/cudnn.err"
  cd "$L"
}
archived body
