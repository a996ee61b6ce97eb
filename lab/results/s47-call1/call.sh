# Session 47, call 1 (prepared at the end of session 46): where a steady d128 tile's fixed
# 1.79 us goes. Pack: lab/results/s47-next/build.sh (device-pack/lab_stamps.xz, item 5's phases
# and the epilogue's sub-phases). Stamps of one launch of (16,16,16,2048,128) and
# (4,32,32,4096,128); phases.py prints the epilogue's steps, tiles.py the per-tile cost again.
# PREDICTION (session 46: epilogue 0.96 us on the first item): the proxy fence + barrier and
# the first barrier take most of it, the stores < 0.2 us.
. lab/decode/check_ab.sh
body() {
  gpu_info
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  timeout 60 /tmp/st/lab_stamps 16 16 16 2048 128 > "$R/stamps_2048.txt" 2>&1; echo "2048 rc=$?"
  timeout 60 /tmp/st/lab_stamps 4 32 32 4096 128 > "$R/stamps_4096.txt" 2>&1; echo "4096 rc=$?"
  python3 lab/results/s47-next/phases.py "$R/stamps_2048.txt" "$R/stamps_4096.txt"
  python3 lab/results/s46-call8/tiles.py "$R/stamps_2048.txt" "$R/stamps_4096.txt"
  gzip "$R"/stamps_*.txt
}
archived body
