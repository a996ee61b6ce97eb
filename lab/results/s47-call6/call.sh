# Session 47, call 6 (the warm machine of call 5, 122 s of device time left): the tests that
# call 5's whole-binary run (cut at 191 s) had not reached, on pack s47b.
export R=$OUT/r; mkdir -p $R; . lab/decode/check_ab.sh; unpack s47b; cd /tmp/s47b && for t in gpu_varlen_paged_decode gpu_varlen_sweep_f16 gpu_varlen_sweep_f32; do timeout 45 bin/gpu $t --exact --nocapture > $R/$t.log 2>&1; echo "$t rc=$?"; grep -E "test result" $R/$t.log; done
# Result: gpu_varlen_paged_decode rc=124 (cut at 45 s; session 46 gave it 120 s), the two
# varlen sweeps passed.
