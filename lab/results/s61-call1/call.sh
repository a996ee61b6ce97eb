# Session 61, call 1 (pack s60b: the shipped kernels; an H200, no H100 lent): what sessions 59-60
# did not run on the final pack: memcheck and racecheck of the gpu_sanitizer_ tests, then the
# cold start with the driver's compute cache disabled.
# PREDICTION: memcheck 0 errors, racecheck 0 hazards (the kernels' PTX is s59c's, which passed
# both); cold start within 0.02 s of session 59's (+0.008 prefill, +0.010 decode, +0.013 backward).
. lab/decode/check_ab.sh
P=s60b
body() {
  S0=$(date +%s)
  gpu_info
  sanitize_stage $P
  echo "sanitize done $(( $(date +%s) - S0 )) s"
  coldstart_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
