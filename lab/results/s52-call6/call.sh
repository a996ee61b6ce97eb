# Session 52, call 6: issue 14's table on pack s52b (transposed PV), same machine as call 5.
# PREDICTION: the 32x4096 decode 0.995-1.005 of cuDNN; the rest as call 1.
# (Run as `R=/tmp/r6 bash lab/results/s52-call6/call.sh`, this file written by the device
# command itself; its r6/ is the call's results.)
. lab/decode/check_ab.sh
P=s52b
body() { S0=$(date +%s); gpu_info; unpack $P; table_runs $P; table_md; echo "elapsed $(( $(date +%s) - S0 )) s"; }
archived body
