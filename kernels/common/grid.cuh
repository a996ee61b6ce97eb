// Which (batch, head, query block) a prefill CTA computes: the 1-D grid order that
// kernels/fwd_sm80.cu and kernels/fwd_sm90.cu share.
#pragma once

#include "params.cuh"

namespace fattn {

// This CTA's (batch, head, first query row). The 1-D grid is (batch·head)-major with the
// query blocks of one head consecutive, last (heaviest under a causal mask) first.
struct QueryBlock {
    int batch, head, m0;
};
__device__ __forceinline__ QueryBlock query_block(const FattnParams& p, int block_m, unsigned block = blockIdx.x) {
    const int num_m = (p.seq_q + block_m - 1) / block_m;
    const int bh = block / num_m;
    const int m_block = num_m - 1 - static_cast<int>(block % num_m);
    return QueryBlock{bh / p.heads, bh % p.heads, m_block * block_m};
}

}  // namespace fattn
