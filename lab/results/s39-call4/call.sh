# Session 39 call 4: the whole GPU test binary (oracle skipped), then the torch float64 oracle,
# on main after the decode-tail merge (pack s39a = fd0a74b). The first full run since session
# 38's f457f8e (the batched index read's 4-byte probe wait).
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s39a 400
}
archived body
