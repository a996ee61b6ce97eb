# Session 59, call 2 (pack s59a: the d96 Hopper forward instances, HopperTraits<96, 0/1>; every
# other kernel's PTX identical to s58a's but for label numbers): the head-dim rows
# (benches/attention.rs HEAD_DIM_SHAPES, scripts/bench_torch.py --only headdim) with the d96
# instance against the same binary on the zero-padded d128 instance (FUSED_ATTN_SM90_D96=0),
# alternating over 2 rounds (A B, B A), between two torch runs (cuDNN, FA2); then the whole
# GPU test binary and the float64 torch oracle.
# PREDICTION: the d96 instance 12-20% faster than padded d128 on the three d96 rows and the
# d80 row (its GEMMs do 75% of the tensor work; the softmax, loads (zeros past the head dim
# come from TMA's fill, not DRAM) and barriers the same); against cuDNN on the d96 rows
# 0.95-1.10 (cuDNN's d96 is its own kernel; unknown). Tests: 36 passed (gpu_hopper_prefill now
# asserts that both dtypes' plain d96 instances ran), oracle 24 of 24.
. lab/decode/check_ab.sh
P=s59a
torch_hd() {
  mkdir -p "$R/torch_hd$1"
  timeout 120 python3 "$L/scripts/bench_torch.py" --out "$R/torch_hd$1" --rep-ms 100 --only headdim > "$R/torch_hd$1.log" 2>&1
  echo "torch_hd$1 rc=$?"; grep -E "^\| prefill" "$R/torch_hd$1/bench_torch.md" | cut -c1-200
}
body() {
  S0=$(date +%s)
  gpu_info; unpack $P
  export FUSED_ATTN_BENCH_CUDA_ONLY=1
  torch_hd 1
  for r in 1 2; do
    order="1 0"; [ $r = 2 ] && order="0 1"
    for d96 in $order; do
      FUSED_ATTN_SM90_D96=$d96 CRITERION_HOME=/tmp/crit-hd-$d96-$r timeout 150 /tmp/$P/bin/bench 'cuda_fused_attn_hd_bf16' --bench \
        --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/hd_${d96}_$r.log" 2>&1
      echo "d96=$d96 round $r rc=$?"; medians /tmp/crit-hd-$d96-$r | sed "s/^/d96=$d96 round=$r /" | tee -a "$R/hd_medians.txt"
    done
  done
  torch_hd 2
  echo "bench part $(( $(date +%s) - S0 )) s"
  gpu_all $P 300
  echo "elapsed $(( $(date +%s) - S0 )) s"
}
archived body
