# Session 25 call 2 (rewritten with lab/decode/check_ab.sh's helpers after the run, same steps):
# the varlen decode's one tile-copy path (pack h90-s25v: kernels/decode_sm80.cu's issue_tile
# with one inlined load_kv_tile, 255 -> 232 registers at bf16 d128) against main (h90-s25m):
# decode tests + memcheck on s25v, the paged rows alternating 3 rounds, then the CPU packed
# batch on the host Xeon with the output prefault on and off (FUSED_ATTN_CPU_PREFAULT), cores
# 2,3, then ncu's kernel-only durations of both packs' varlen decode. (Run with $R = $OUT/r:
# the device tool returned 8 of its files; later calls archive.)
R=$OUT/r; . lab/decode/check_ab.sh
gpu_info
decode_tests s25v memcheck
paged_ab s25m s25v 3
lscpu > $R/lscpu.txt
for round in 1 2; do for pf in 0 1; do
  FUSED_ATTN_CPU_PREFAULT=$pf RAYON_NUM_THREADS=2 timeout 100 taskset -c 2,3 $L/device-pack/bench_cpu --varlen \
    --dtype f32 --reps 11 --only packed,loop,packed_into > $R/cpu_pf${pf}_$round.json 2> $R/cpu_pf${pf}_$round.err
done; done
for t in s25m s25v; do
  kernel_durations $t paged16_hostidx_b32_h32_kv8_q1_k4096_d128 paged256_hostidx_b32_h32_kv8_q1_k4096_d128 \
    contiguous_b8_h32_kv8_q1_k8192_d128 paged16_hostidx_b8_h32_kv8_q1_k8192_d128
done
