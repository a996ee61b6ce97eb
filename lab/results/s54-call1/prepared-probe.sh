# Prepared at the end of session 53 (not run): lab/hopper/cluster_occupancy.py, the driver's
# max active clusters of 1, 2, 4 and 8 CTAs and the SMs a probe grid's first wave covers, for
# blocks shaped like the plain d128 instance (384 threads, 197 736 bytes), the wide d128 one
# (214 104) and the plain d64 one (512 threads, 148 616); seconds of device time, no pack needed (nvcc compiles the
# probe there). The lab README's plan item 2: whether K multicast over clusters of 4 could use
# every SM of a 132-SM persistent grid, and whether today's pairs do.
# PREDICTION: pairs cover all 132 SMs (every GPC's SM count is even); clusters of 4 leave
# 4-12 SMs idle (uneven GPCs), in which case clusters of 4 on a persistent grid are out.
. lab/decode/check_ab.sh
body() {
  gpu_info
  for shape in "384 197736" "384 214104" "512 148616"; do
    set -- $shape
    timeout 60 python3 lab/hopper/cluster_occupancy.py --threads $1 --smem $2 2>&1 | tee -a "$R/clusters.txt"
  done
}
archived body
