# Session 20, call 2: per-warp decode partials (s20k) against HEAD (s20a) on the decode rows,
# 3 rounds alternating; the combine launch's count per row comes from s20k's defaults.
R=$OUT/r; mkdir -p $R
S=$(date +%s)
AB_FILTER='cuda_fused_attn_bf16/b[0-9]+_h32_kv8_q[14]_k' ROUNDS=3 timeout 400 bash lab/hopper/ab.sh device-pack/h90-s20a-9.tar.xz device-pack/h90-s20k-9.tar.xz > /dev/null 2>&1
echo "ab $(( $(date +%s) - S )) s"
python3 lab/hopper/ab_table.py $R/ab_medians.txt
tar -czf $OUT/r.tgz -C $OUT r
