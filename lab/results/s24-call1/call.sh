# Session 24, call 1 (H100/H200): the decode kernels' exp2f through ex2.approx.ftz
# (lab/results/s23-next/ex2.diff), pack h90-s24x, against h90-s23c (main's kernels, 6efdbf9).
# Decode tests (both generations) and memcheck of the sanitizer subset on s24x, the decode rows
# alternating s23c / s24x 3 rounds, torch's decode rows in the same call; then issue 13's CPU
# row on the host Xeon (bench_cpu --varlen f32, 2 threads pinned to cores 2,3). Rewritten in
# session 25 with lab/decode/check_ab.sh's helpers (the same steps).
R=$OUT/r; . lab/decode/check_ab.sh
body() {
  gpu_info
  decode_tests s24x memcheck
  decode_ab s23c s24x 3
  torch_decode
  lscpu > $R/lscpu.txt; cat /sys/kernel/mm/transparent_hugepage/enabled > $R/thp.txt 2>&1
  for round in 1 2; do
    RAYON_NUM_THREADS=2 timeout 150 taskset -c 2,3 $L/device-pack/bench_cpu --varlen --dtype f32 --reps 21 \
      > $R/cpu_varlen_f32_$round.json 2> $R/cpu_varlen_$round.err
    echo "cpu round $round rc=$?"
  done
}
archived body
