# Prepared at the end of session 31, not run: the first call of session 32 (plan item 1).
# ncu --set full of the (32,32,8,1,4096,128) decode row, ours (the split kernel, one split, no
# combine) against cuDNN's, in the layout torch's table uses (bhsd: K/V made (B,Hkv,S,D), passed
# to ours as views; session 31 call 5 had ours 0.974x cuDNN there, 0.982x in bshd): stall
# reasons, the memory workload section (sectors per request, outstanding requests), and ours'
# per-instruction SASS stall samples. Session 29's "ours" profile of this row caught a prefill
# kernel; session 29 call 4's had only five sections. Pack: `lab/pack-h90.sh s32a` at HEAD,
# renamed device-pack/h90-s32a-9.tar.xz (bench binary only is enough: strip bin/gpu).
# Reading: python3 lab/decode/sass_stalls.py r/sass_ours32.csv; r/details_*.txt side by side.
. lab/decode/check_ab.sh
. lab/decode/prof.sh
body() {
  gpu_info
  unpack s32a
  # One untimed call per bench row comes first (10 rows, at most 2 decode launches each):
  # skipping 40 decode launches lands in this row's warm-up.
  (cd /tmp/s32a && prof ours32 fattn_decode 40 'bhsd_b32_h32_kv8_q1_k4096_d128$')
  (cd /tmp/s32a && prof ours32s fattn_decode 40 'bshd_b32_h32_kv8_q1_k4096_d128$')
  prof_torch cudnn32 'cudnn|fort|sdpa' 3
  python3 "$L/lab/decode/sass_stalls.py" "$R/sass_ours32.csv" > "$R/stalls_ours32.txt" 2>&1; head -40 "$R/stalls_ours32.txt"
  for f in "$R"/details_*.txt; do echo "== $f"; grep -E "Stall|Warp Cycles Per|sectors|Sectors|Requests|L2 Hit|DRAM Through" "$f" | head -30; done
  cd "$L"
}
archived body
