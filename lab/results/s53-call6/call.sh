# Session 53 call 6: issue 14's table a third time on pack s53b, on whatever H200 a fresh start gives
# (calls 2-5 ran on GPU-85528c54): how the rows within ~1% of cuDNN move between machines.
# PREDICTION: 16-19 of 19; the 32x4096 decode 0.99-1.00, d128 2048 0.99-1.03.
. lab/decode/check_ab.sh
P=s53b
body() { S0=$(date +%s); gpu_info; unpack $P; table_runs $P; table_md; echo "elapsed $(( $(date +%s) - S0 )) s"; }
archived body
