# Session 22, call 2 (H200): the decode rows' K/V layout. Ours on (B,S,Hkv,D) tensors (the bench
# table's rows) against (B,Hkv,S,D) tensors passed as views (torch's layout), 2 rounds; torch
# SDPA (cuDNN, FA2) in both layouts; ncu of the (32,32,8,1,4096) and (1,32,8,1,2048) rows, ours
# in both layouts and torch's kernels (durations, DRAM bytes and throughput).
R=$OUT/r; mkdir -p $R; S=$(date +%s); L=$PWD
. $L/lab/medians.sh
mkdir -p /tmp/h90 && tar -xJf device-pack/h90-s22l-9.tar.xz -C /tmp/h90 && cd /tmp/h90 || exit 1
for r in 1 2; do
  CRITERION_HOME=/tmp/crit-$r timeout 200 bin/bench cuda_decode_layout_bf16 --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > $R/layout_$r.log 2>&1
  medians /tmp/crit-$r | sed "s/^/round=$r /" | tee -a $R/layout_medians.txt
done
echo "layout $(( $(date +%s) - S )) s"
timeout 120 python3 $L/lab/decode/sdpa_layout.py > $R/torch_layout.txt 2>&1; cat $R/torch_layout.txt
echo "torch $(( $(date +%s) - S )) s"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size
for row in b32_h32_kv8_q1_k4096 b1_h32_kv8_q1_k2048; do for lay in bshd bhsd; do
  timeout 150 ncu --clock-control none --metrics $M --kernel-name regex:fattn_decode --launch-skip 16 --launch-count 4 \
    bin/bench "cuda_decode_layout_bf16/${lay}_${row}" --bench --warm-up-time 0.3 --measurement-time 0.5 --sample-size 10 --noplot > $R/ncu_${lay}_${row}.txt 2>&1
  echo "== ours $lay $row"; grep -E "^  [a-zA-Z_].*\(|gpu__time|dram__|lts__|launch__grid" $R/ncu_${lay}_${row}.txt | head -24
done; done
for i in 3 2; do
  timeout 150 ncu --clock-control none --metrics $M python3 $L/lab/decode/sdpa_layout.py --ncu $i > $R/ncu_torch_$i.txt 2>&1
  echo "== torch row $i"; grep -E "^  [a-zA-Z_].*\(|gpu__time|dram__bytes|dram__thr|ncu done" $R/ncu_torch_$i.txt | head -80
done
echo "total $(( $(date +%s) - S )) s"
tar -czf $OUT/r.tgz -C $OUT r
