# Session 30 call 5: the whole GPU test binary of pack s30d (HEAD 3f5ad68's kernels and tests,
# with the sanitizer subset's new (1,2,1,256,256,64) shape) with a longer limit than session
# 29's 250 s (which stopped before the varlen sweeps), then the torch float64 oracle.
. lab/decode/check_ab.sh
body() { gpu_info; gpu_all s30d 420; }
archived body
