# Session 55, call 3 (pack s55q: d696618's kernels, the plain d128 instance with Q in
# registers; PACK_COLDSTART=1). Issue 14's table on one machine (torch run 1, ours, torch run
# 2), the cold start, then the whole GPU test binary and the float64 oracle.
# PREDICTION: 17-19 of 19 rows at or above cuDNN; the d128 rows 1-2% above session 54's
# ratios (call 2's A/B); cold start within 0.5 s of warm; every test passes.
. lab/decode/check_ab.sh
P=s55q
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  table_runs $P; table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  coldstart_stage $P
  echo "coldstart done at $(( $(date +%s) - S0 )) s"
  gpu_all $P 330
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
