// From the repository root: nvcc -std=c++17 -O1 -arch=sm_80 --expt-relaxed-constexpr -I kernels
//   lab/results/s33-next/bwd_tail_map.cu -o /tmp/bwdmap && /tmp/bwdmap   (no GPU needed)
// Host check: bwd_cta with tail groups is a bijection of blocks onto (group, key block).
#include <cstdio>
#include <vector>
#include "common/params.cuh"
#include "common/bwd_index.cuh"
int main() {
  int bad = 0, cases = 0;
  for (int seq : {1, 64, 100, 1000, 2048}) for (int kvh : {1, 3}) for (int splits : {1, 2}) for (int ds : {1, 2})
  for (int batch : {1, 5}) for (int tail : {0, 1, 2, 7, 1000}) {
    const int bn = 64, nkb = (seq + bn - 1) / bn, groups = batch * kvh * splits * ds, nb = groups * nkb;
    std::vector<int> seen(nb, 0);
    for (int blk = 0; blk < nb; ++blk) {
      fattn::bwd::BwdCta c = fattn::bwd::bwd_cta(blk, seq, seq, kvh, 2 * splits, -1, 0, splits, 2, bn, 64, ds, 64, nb, tail);
      const int kb = c.n0 / bn, dh = c.d_off / 64, split = (c.h_first - c.kvh * 2 * splits) / 2;
      const int g = ((c.b * kvh + c.kvh) * splits + split) * ds + dh;
      if (kb < 0 || kb >= nkb || g < 0 || g >= groups) { ++bad; continue; }
      seen[g * nkb + kb]++;
    }
    for (int x : seen) bad += x != 1;
    ++cases;
  }
  printf("bwd_cta tail mapping: %d cases, %d bad\n", cases, bad);
  return bad != 0;
}
