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

// query_block with the last `tail_pairs` (batch, head) pairs' tiles in weight order across
// those pairs: tile `head_tiles + i` is pair `pairs - tail_pairs + i % tail_pairs`'s query
// block `num_m - 1 - i / tail_pairs` (under a right-bounded mask a block's cost grows with its
// row, so these come heaviest first and a drawn grid ends on its lightest tiles); the tiles
// before them keep query_block's order. tail_pairs <= 0: query_block.
__device__ __forceinline__ QueryBlock query_block_tail(const FattnParams& p, int block_m, int tile, int tail_pairs) {
    const int num_m = (p.seq_q + block_m - 1) / block_m;
    const int pairs = p.batch * p.heads;
    const int head_tiles = (pairs - tail_pairs) * num_m;
    if (tail_pairs <= 0 || tile < head_tiles) return query_block(p, block_m, static_cast<unsigned>(tile));
    const int i = tile - head_tiles;
    const int bh = pairs - tail_pairs + i % tail_pairs;
    const int m_block = num_m - 1 - i / tail_pairs;
    return QueryBlock{bh / p.heads, bh % p.heads, m_block * block_m};
}

}  // namespace fattn
