# Session 46, call 8: the plain d128 instance's cost per query tile, from lab stamps. Calls 6-7
# (ncu, equal clocks): cuDNN's tensor pipe 73.9% active at d128 2048 (16 key blocks a tile),
# 76.1% at 4096 (32), 78.0% at 16k; a fit gives cuDNN ~1.0 key block of fixed cost per tile,
# and ours (71.3% at 2048; 4096 about level with cuDNN in the bench) ~2.2. Stamps (a
# FATTN_LAB_STAMPS=5 build of HEAD, examples/lab_stamps.rs: per consumer, each item's start
# and end) of one launch of (16,16,16,2048,128) and (4,32,32,4096,128): whole tiles' durations
# at 16 and 32 key blocks give the fixed cost per tile directly (tiles.py).
# PREDICTION: 1.5-3 key blocks of fixed cost per tile (the two consumers' epilogues and first
# blocks coincide).
. lab/decode/check_ab.sh
H=lab/results/s46-call8
body() {
  gpu_info
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  timeout 60 /tmp/st/lab_stamps 16 16 16 2048 128 > "$R/stamps_2048.txt" 2>&1; echo "2048 rc=$?"
  timeout 60 /tmp/st/lab_stamps 4 32 32 4096 128 > "$R/stamps_4096.txt" 2>&1; echo "4096 rc=$?"
  head -3 "$R/stamps_2048.txt"; grep "^# phase 0 " "$R/stamps_2048.txt" | head -4
  python3 $H/tiles.py "$R/stamps_2048.txt" "$R/stamps_4096.txt"
  gzip "$R"/stamps_*.txt
}
archived body
