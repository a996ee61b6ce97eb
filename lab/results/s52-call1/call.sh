# Session 52, call 1: main's HEAD (pack s52a = 29c5793's kernels + lab/pack-h90.sh's
# PACK_COLDSTART, no kernel or glue change since session 51's s51b/s51c) on one machine:
# issue 14's table (torch run 1, ours, torch run 2), the cold start of each kernel family with
# the driver's compute cache disabled (device-run.sh's coldstart stage), then the whole GPU
# test binary and the PyTorch float64 oracle (last run in session 50 call 3).
# PREDICTION: 17-18 of 19 rows at or above cuDNN in both runs (the 32×4096 decode short, 0.99);
# cold start within 0.5 s of warm for prefill, decode and backward (session 48: all under
# 0.1 s); every GPU test and the oracle pass.
. lab/decode/check_ab.sh
P=s52a
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  table_runs $P
  table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  DEVICE_RUN_WORK=/tmp/dr LIMIT_COLDSTART=60 bash scripts/device-run.sh "$L/device-pack/h90-$P-9.tar.xz" "$R/dr" coldstart > "$R/coldstart_run.log" 2>&1
  echo "coldstart rc=$?"; grep -E "^== |^coldstart " "$R/coldstart_run.log" "$R/dr/coldstart.log" | cut -c1-250
  echo "coldstart done at $(( $(date +%s) - S0 )) s"
  gpu_all $P $(( 520 - ($(date +%s) - S0) ))
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
