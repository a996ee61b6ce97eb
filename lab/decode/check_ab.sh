# The decode A/B call's shape (session 23 call 5, session 24 calls 1-2 wrote it inline): the
# decode tests and compute-sanitizer tools on the new pack, the decode rows alternating old /
# new pack, torch's decode rows in the same call. For device call scripts to source.
#   . lab/decode/check_ab.sh
#   decode_tests NEW [TOOLS]   # TOOLS: compute-sanitizer tools on gpu_sanitizer_subset, default memcheck
#   decode_ab OLD NEW [ROUNDS] # the bench's decode rows, ROUNDS rounds (default 3), then the table
#   torch_decode               # scripts/bench_torch.py --only decode
# OLD and NEW are lab pack tags: device-pack/h90-TAG-9.tar.xz, unpacked to /tmp/TAG. $R is the
# results folder, $L the checkout.
CHECK_LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CHECK_LAB/medians.sh"
unpack() { [ -d "/tmp/$1/bin" ] || { mkdir -p "/tmp/$1" && tar -xJf "$L/device-pack/h90-$1-9.tar.xz" -C "/tmp/$1"; }; }
decode_tests() {
  unpack "$1" || return 1
  (cd "/tmp/$1" && head -3 COMMIT
   for t in gpu_decode gpu_varlen_paged_decode gpu_lse; do
     FUSED_ATTN_BENCH_CUDA_ONLY=1 timeout 120 bin/gpu $t --exact --nocapture; echo "$t rc=$?"
   done > "$R/tests.log" 2>&1
   grep -E "rc=|cases ×|test result|panicked" "$R/tests.log" | cut -c1-200
   for tool in ${2:-memcheck}; do
     timeout 100 compute-sanitizer --tool "$tool" bin/gpu gpu_sanitizer_subset --exact --nocapture > "$R/san_$tool.log" 2>&1
     echo "$tool rc=$?"; grep -E "SUMMARY|test result" "$R/san_$tool.log" | tail -2
   done)
}
decode_ab() {
  unpack "$1" && unpack "$2" || return 1
  for r in $(seq "${3:-3}"); do for t in "$1" "$2"; do
    CRITERION_HOME="/tmp/crit-$t-$r" timeout 60 "/tmp/$t/bin/bench" 'cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' --bench \
      --warm-up-time 1 --measurement-time 2 --sample-size 10 --noplot > "/tmp/ab_${t}_$r.log" 2>&1
    medians "/tmp/crit-$t-$r" | sed "s/^/pack=$t round=$r /" >> "$R/ab_medians.txt"
  done; done
  python3 "$CHECK_LAB/hopper/ab_table.py" "$R/ab_medians.txt"
}
torch_decode() {
  mkdir -p "$R/decode"
  timeout 60 python3 "$L/scripts/bench_torch.py" --out "$R/decode" --rep-ms 100 --only decode > "$R/torchd.log" 2>&1
  echo "torchd rc=$?"; grep -E "^\| decode" "$R/decode/bench_torch.md" | cut -d'|' -f3,4,5,8
}
