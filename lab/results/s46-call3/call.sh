# Session 46, call 3: the 32x4096 decode's gap is the flush's dirty L2? Call 2 (same call, 2
# rounds): the crate 135.0 / 134.8 us against cuDNN's 133.4 / 132.8 under do_bench, but in ncu
# (which flushes and invalidates clean) our kernel and cuDNN's tie (122.8-126.6 against
# 122.6-124.6 us). do_bench zeroes 256 MiB before each rep, leaving ~50 MB of dirty lines in
# L2 that the timed kernel's reads evict and the DRAM writes back inside the timed window
# (~12 us of the ~135). lab/decode/flush_ab.py times the decode lab (plain), the decode lab
# with evict-first K/V copies (FATTN_DECODE_L2_EVICT_FIRST=1: its own lines are evicted before
# the flush's dirty ones) and cuDNN under do_bench's flush (dirty) and a read-only flush
# (clean), 3 rounds alternating, the five decode rows.
# PREDICTION: under the clean flush ours ties cuDNN on the 32x4096 row (>= 0.995); evict-first
# takes the dirty-flush 32x4096 row 2-8% down (the write-back leaves the window) and moves the
# clean-flush rows by < 1%.
. lab/decode/check_ab.sh
body() {
  gpu_info
  timeout 400 python3 lab/decode/flush_ab.py --libs .decode-lab/libdecode_lab.so,.decode-lab/libdecode_lab_ef.so \
    --rounds 3 > "$R/flush_ab.txt" 2>&1; echo "flush_ab rc=$?"; cat "$R/flush_ab.txt"
}
archived body
