# Session 38 call 6: why the varlen bench's GPU-index row ran 12.72-12.79 ms against 10.70-10.76
# with host indices in call 4 (session 36: 10.82 against 10.75). examples/lab_index_read
# --varlen (pack s38c, the library of 2e6e32a): hostidx, devidx, and hostidx after a device
# synchronize (a drain without an index read), timed as the bench times them; with the batched
# read (default) and the per-tensor read (FUSED_ATTN_INDEX_READ=stream), on both device kinds.
. lab/decode/check_ab.sh
body() {
  gpu_info
  unpack s38c
  (cd /tmp/s38c && for dk in "" --with-stream; do for m in batched stream; do
     if [ "$m" = stream ]; then export FUSED_ATTN_INDEX_READ=stream; else unset FUSED_ATTN_INDEX_READ; fi
     timeout 90 bin/lab_index_read --varlen $dk 2>&1 | tee -a "$R/varlen_read.txt"
   done; done)
}
archived body
