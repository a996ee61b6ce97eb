# Session 53 call 2: the committed default (9a78de3: transposed QKᵀ for rows8 decode blocks):
# issue 14's table in one run (torch, ours, torch), the cold-start stage, then the whole GPU
# test binary and the PyTorch float64 oracle.
# PREDICTION: every test passes; decode rows as call 1's tqk (2048 ~12.8 µs, 32x4096 ~133),
# prefill unchanged (no prefill code changed).
# (The stages below are check_ab.sh helpers since the end of session 53; they hold the exact
# commands this call ran inline.)
. lab/decode/check_ab.sh
P=s53b
body() {
  S0=$(date +%s)
  gpu_info
  unpack $P
  table_runs $P
  table_md
  echo "table done at $(( $(date +%s) - S0 )) s"
  coldstart_stage $P
  echo "coldstart done at $(( $(date +%s) - S0 )) s"
  gpu_all $P $(( 520 - ($(date +%s) - S0) ))
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
