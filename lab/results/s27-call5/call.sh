# (gpu_all: lab/decode/check_ab.sh since the end of session 27; this call ran the same steps inline.)
# Session 27 call 5: the final pack s27d's GPU test binary whole (every test, both kernel
# generations where a test runs both) and the PyTorch float64 oracle.
. lab/decode/check_ab.sh
body() {
  gpu_info
  gpu_all s27d 270
}
archived body
