# Session 59, call 5 (pack s59b): cold start with the grown fwd_sm90 module (48 entries against
# 40: the d96 instances), device-run.sh's coldstart stage (CUDA_CACHE_DISABLE=1, first call
# against a warm one, prefill, decode and backward).
# PREDICTION: within 0.02 s of session 58's +0.0055 / +0.0067 / +0.0088 s (the module load reads
# a few hundred KB more of cubin); far inside the 0.5 s.
. lab/decode/check_ab.sh
P=s59b
body() { gpu_info; coldstart_stage $P; }
archived body
