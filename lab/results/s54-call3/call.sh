# Session 54, call 3 (pack s54a, as calls 1-2). The two tests call 2's whole-binary run did
# not reach inside its 250 s limit (gpu_varlen_sweep_f16, gpu_varlen_sweep_f32; every test
# before them passed), issue 14's table a second time (likely another H200), then synccheck
# and the sanitize stage (memcheck, racecheck of gpu_sanitizer_) on the new decode SASS.
# PREDICTION: tests pass; 16-19 of 19 rows; 0 errors, 0 hazards.
. lab/decode/check_ab.sh
P=s54a
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  pack_tests $P gpu_varlen_sweep_f16 gpu_varlen_sweep_f32
  echo "tests done at $(( $(date +%s) - S0 )) s"
  table_runs $P; table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  synccheck_stage $P
  echo "synccheck done at $(( $(date +%s) - S0 )) s"
  sanitize_stage $P
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
