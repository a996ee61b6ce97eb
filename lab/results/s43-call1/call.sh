# Session 43 call 1: pack s43a (100d185, main's HEAD at the session's start: session 42's last
# host-code refactors c1b8cb6, e0e8979, 04c2b03 never ran on a GPU). The guess test, the
# sanitizer subset under memcheck / racecheck / synccheck, the whole GPU binary and the oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_tests s43a "memcheck racecheck synccheck" gpu_device_indices_guess
  gpu_all s43a 300
}
archived body
