# Session 53 call 5: issue 14's table once more on pack s53b (same machine as calls 2-4, some
# minutes later): a second same-run sample of the two rows short in call 2 (d128 2048 prefill
# 1.027 / 0.991, (32,32,8,1,4096) decode 0.998 / 0.993).
# PREDICTION: 16-19 of 19 rows; those two rows within ±1.5% of 1.0.
. lab/decode/check_ab.sh
P=s53b
body() { S0=$(date +%s); gpu_info; unpack $P; table_runs $P; table_md; echo "elapsed $(( $(date +%s) - S0 )) s"; }
archived body
