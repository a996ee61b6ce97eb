# Prepared at the end of session 39 (plan item 1): where the 32x4096 decode's steady state loses
# to cuDNN's (ncu at base clocks, session 38 call 8: DRAM 86.5% against 89.7%, same grid, warps
# and blocks per SM). The stall breakdown per issued instruction (long scoreboard = waiting on
# cp.async data, lg_throttle = the LSU queue full of copies, barrier, mio, ...), the L2 and DRAM
# read rates and L1 wavefronts, for ours (pack s39b, device-pack/h90-s39b-9.tar.xz; rebuild with
# lab/pack-h90.sh s39b on main if it is gone) and cuDNN's kernel through PyTorch SDPA. ~2 min.
# Read: a high lg_throttle on ours says fewer, larger copies per warp (bulk/TMA) would pay where
# the earlier A/Bs measured the whole row; a high long_scoreboard with few bytes in flight says
# deeper rings; neither says the loss is the DRAM access order (pages, banks).
. lab/decode/check_ab.sh
M=dram__bytes_read.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum.per_second,smsp__inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum
for s in long_scoreboard lg_throttle barrier mio_throttle short_scoreboard wait math_pipe_throttle not_selected selected no_instruction drain membar branch_resolving dispatch_stall misc sleeping tex_throttle imc_miss; do
  M="$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
body() {
  gpu_info
  unpack s39b
  cd /tmp/s39b
  timeout 120 ncu --metrics "$M" --csv --page raw -k regex:fattn_decode --launch-skip 20 --launch-count 2 \
    bin/bench 'cuda_fused_attn_bf16/b32_h32_kv8_q1_k4096_d128$' --bench --noplot --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 \
    > "$R/ours.csv" 2> "$R/ours.err"; echo "ours rc=$?"
  timeout 120 ncu --metrics "$M" --csv --page raw -k regex:'cudnn|sdpa|fprop|flash|xmma|attn' --launch-skip 4 --launch-count 2 \
    python3 "$L/lab/decode/cudnn_decode.py" > "$R/cudnn.csv" 2> "$R/cudnn.err"; echo "cudnn rc=$?"
  grep -c . "$R/ours.csv" "$R/cudnn.csv"; tail -2 "$R/cudnn.err"
  cd "$L"
}
archived body
