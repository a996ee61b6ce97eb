# Session 23 call 1 (prepared in session 22 as s22-next-ncu/call.sh; run on main bb476e9, pack h90-s23m): ncu --set full
# of the decode's two short parts on the H200 against cuDNN's, with per-instruction stall
# samples of ours. Pack: lab/pack-h90.sh on main (bench binary with cuda_decode_layout_bf16),
# recompressed -9, carried as device-pack/. About 3 minutes of device time.
#   1. the (32,32,8,1,4096) split kernel (one split; cuDNN's single kernel 123 µs, ours 129):
#      DRAM and L2 throughput, stall reasons, sectors per request;
#   2. the (1,32,8,1,2048) combine launch (5.9 µs) against cuDNN's lean_reduction (3.4 µs).
# Summaries: python3 lab/decode/sass_stalls.py r/sass_split.csv (and r/sass_combine.csv).
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
P=$(ls device-pack/h90-*.tar.xz | head -1)
mkdir -p /tmp/h90 && tar -xJf "$P" -C /tmp/h90 && cd /tmp/h90 || exit 1
export FUSED_ATTN_BENCH_CUDA_ONLY=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
prof() {  # TAG KERNEL_REGEX SKIP ROW
  timeout 200 ncu --set full --import-source no -k "regex:$2" --launch-skip "$3" -c 1 -f -o /tmp/src_$1 bin/bench \
    "cuda_decode_layout_bf16/$4" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/run_$1.log 2>&1
  ncu -i /tmp/src_$1.ncu-rep --page details > $R/details_$1.txt 2>&1
  ncu -i /tmp/src_$1.ncu-rep --page source --csv --print-source sass > $R/sass_$1.csv 2>&1
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" $R/details_$1.txt | sed "s/^/$1: /" | head -10
}
prof split '^fattn_decode_bf16_d128$' 8 bshd_b32_h32_kv8_q1_k4096_d128
prof combine '^fattn_decode_combine_bf16_d128$' 8 bshd_b1_h32_kv8_q1_k2048_d128
for pick in "3 cudnn_torch_split cudnn_generated" "2 cudnn_torch_combine lean_reduction"; do
  set -- $pick
  timeout 200 ncu --set full -k "regex:$3" -c 1 -f -o /tmp/src_$2 python3 $L/lab/decode/sdpa_layout.py --ncu $1 > $R/run_$2.log 2>&1
  ncu -i /tmp/src_$2.ncu-rep --page details > $R/details_$2.txt 2>&1
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" $R/details_$2.txt | sed "s/^/$2: /" | head -10
done
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
# Added in session 23: the 2048 row's split kernel against cuDNN's, and (8,32,8,1,8192)'s.
cd /tmp/h90
prof split2048 '^fattn_decode_bf16_d128$' 8 bshd_b1_h32_kv8_q1_k2048_d128
prof split8192 '^fattn_decode_bf16_d128$' 8 bshd_b8_h32_kv8_q1_k8192_d128
for pick in "2 cudnn_split2048 cudnn_generated" "0 cudnn_split8192 cudnn_generated"; do
  set -- $pick
  timeout 200 ncu --set full -k "regex:$3" -c 1 -f -o /tmp/src_$2 python3 $L/lab/decode/sdpa_layout.py --ncu $1 > $R/run_$2.log 2>&1
  ncu -i /tmp/src_$2.ncu-rep --page details > $R/details_$2.txt 2>&1
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" $R/details_$2.txt | sed "s/^/$2: /" | head -10
done
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
