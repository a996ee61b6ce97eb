# Prepared at the end of session 28, not run: the first GPU call of session 29 (the next
# session's plan, item 1). Needs a lab build of HEAD, `NVCC_FLAGS=-DFATTN_LAB_STAMPS=5
# FUSED_ATTN_CUDA_ARCHS=90 CARGO_TARGET_DIR=$FUSED_ATTN_CACHE/target-lab cargo build --release
# --features cuda --example lab_stamps`, stripped and xz-compressed to device-pack/lab_stamps.xz.
# The stamps of the d128 2048 and 4096 rows and GQA, each CTA with its SM id (g_lab_smid): is
# the 2.4% spread of per-block tile time (26.5-27.2 µs, session 28 call 4) a property of SMs
# (the same SMs slow in every row and run) or of the tiles they take?
. lab/decode/check_ab.sh
body() {
  gpu_info
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  for a in "16 16 16 2048 128" "16 16 16 2048 128" "4 32 32 4096 128" "4 32 4 4096 128"; do
    n=$((${n:-0} + 1))
    timeout 60 /tmp/st/lab_stamps $a > "$R/stamps_${n}_${a// /_}.txt" 2>&1; echo "stamps $a rc=$?"
  done
  gzip "$R"/stamps_*.txt
  cd "$L"
}
archived body
