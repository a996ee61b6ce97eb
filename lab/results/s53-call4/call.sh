# Session 53 call 4: call 3's ncu loop again with the row name fixed (call 3 read it from ${10},
# empty, so its "ours" runs profiled no row of interest): ours and cuDNN's kernel on the
# (32,32,8,1,4096) decode row and the d128 2048 prefill row, pack s53b.
# PREDICTION: decode: both at 88-91% of DRAM peak, durations within 2%; prefill: ours shorter
# than cuDNN's under ncu (session 46: 0.94-0.97 of its cycles).
# (The ncu loop below is a check_ab.sh helper, ncu_vs_cudnn, since the end of session 53; it holds the exact
# commands this call ran inline.)
. lab/decode/check_ab.sh
P=s53b
body() {
  S0=$(date +%s)
  gpu_info
  ncu_vs_cudnn $P "fattn_decode 32 32 8 1 4096 128 0 b32_h32_kv8_q1_k4096_d128" \
    "fattn_fwd 16 16 16 2048 2048 128 0 b16_h16_kv16_q2048_k2048_d128"
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
