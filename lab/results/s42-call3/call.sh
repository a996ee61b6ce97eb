# Session 42 call 3: pack s42b (e1da53c's code before cargo fmt). The whole GPU test binary and
# the torch float64 oracle; then issue 13's varlen prefill rows (criterion cuda_varlen_bf16,
# one round; the devidx row now guesses) and torch's FA2 varlen on the same batch, same call.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s42b 330
  (cd /tmp/s42b
   CRITERION_HOME=/tmp/vcrit timeout 120 bin/bench 'cuda_varlen_bf16' --bench --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "$R/vbench.log" 2>&1
   echo "vbench rc=$?"; medians /tmp/vcrit | tee "$R/vmedians.txt"
   timeout 120 python3 scripts/bench_torch_varlen.py --out "$R" > "$R/torch_varlen.log" 2>&1; echo "torch varlen rc=$?"
   tail -8 "$R/torch_varlen.log")
}
archived body
