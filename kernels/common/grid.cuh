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

// n / d with d's FattnFastDiv (0 <= n < 2^31): a 32 × 32 multiply and a shift.
__device__ __forceinline__ int fast_div(int n, const FattnFastDiv& d) {
    return static_cast<int>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * d.mul) >> (31 + d.shift));
}

// query_block with the last `tail_pairs` (batch, head) pairs' tiles in weight order across
// those pairs: tile `head_tiles + i` is pair `pairs - tail_pairs + i % tail_pairs`'s query
// block `num_m - 1 - i / tail_pairs` (under a right-bounded mask a block's cost grows with its
// row, so these come heaviest first and a drawn grid ends on its lightest tiles); the tiles
// before them keep query_block's order. tail_pairs <= 0: query_block. `div_m`, `div_heads`
// and `div_pairs` divide a non-negative int by num_m, p.heads and tail_pairs: `/` here, the
// launch's FattnFastDiv in the Hopper forward (query_block_tail_fast), whose tiles name
// their block per item.
template <class DivM, class DivHeads, class DivPairs>
__device__ __forceinline__ QueryBlock query_block_tail_by(const FattnParams& p, int block_m, int tile, int tail_pairs,
                                                          DivM div_m, DivHeads div_heads, DivPairs div_pairs) {
    const int num_m = (p.seq_q + block_m - 1) / block_m;
    const int pairs = p.batch * p.heads;
    const int head_tiles = (pairs - tail_pairs) * num_m;
    int bh, m_block;
    if (tail_pairs <= 0 || tile < head_tiles) {
        bh = div_m(tile);
        m_block = num_m - 1 - (tile - bh * num_m);
    } else {
        const int i = tile - head_tiles, step = div_pairs(i);
        bh = pairs - tail_pairs + (i - step * tail_pairs);
        m_block = num_m - 1 - step;
    }
    const int batch = div_heads(bh);
    return QueryBlock{batch, bh - batch * p.heads, m_block * block_m};
}
__device__ __forceinline__ QueryBlock query_block_tail(const FattnParams& p, int block_m, int tile, int tail_pairs) {
    const int num_m = (p.seq_q + block_m - 1) / block_m;
    return query_block_tail_by(
        p, block_m, tile, tail_pairs, [num_m](int n) { return n / num_m; }, [&p](int n) { return n / p.heads; },
        [tail_pairs](int n) { return n / tail_pairs; });
}
__device__ __forceinline__ QueryBlock query_block_tail_fast(const FattnHopperParams& hp, int block_m, int tile,
                                                            int tail_pairs) {
    return query_block_tail_by(
        hp.fwd, block_m, tile, tail_pairs, [&hp](int n) { return fast_div(n, hp.div_m); },
        [&hp](int n) { return fast_div(n, hp.div_heads); }, [&hp](int n) { return fast_div(n, hp.div_pairs); });
}

}  // namespace fattn
