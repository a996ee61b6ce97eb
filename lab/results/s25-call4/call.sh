# Session 25 call 4 (rewritten with lab/decode/check_ab.sh's helpers after the run, same steps):
# issue 14's decode rows on HEAD's pack (h90-s25c; the dense decode SASS-identical to main's)
# beside main's pack, with PyTorch's SDPA (cuDNN, FA2) before and after; then issue 13's CPU
# rows on the host Xeon (bench_cpu --varlen, every variant, the output prefault on as
# shipped), cores 2,3, 2 threads.
. lab/decode/check_ab.sh
body() {
  gpu_info
  torch_decode
  decode_ab s25m s25c 2
  (R=$R/t2; mkdir -p $R; torch_decode)
  lscpu > $R/lscpu.txt
  for run in f32_1 f16_1 f32_2; do
    RAYON_NUM_THREADS=2 timeout 110 taskset -c 2,3 $L/device-pack/bench_cpu --varlen --dtype ${run%_*} --reps 13 \
      > $R/cpu_$run.json 2> $R/cpu_$run.err
    echo "cpu $run rc=$?"
  done
}
archived body
