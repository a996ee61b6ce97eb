// Which (batch, head, query block) a prefill CTA computes: the 1-D grid order that
// kernels/fwd_sm80.cu and kernels/fwd_sm90.cu share.
#pragma once

#include "params.cuh"

namespace fattn {

// A tile's (batch, head, first query row). The 1-D grid of tiles is (batch·head)-major with
// the query blocks of one head consecutive, last (heaviest under a causal mask) first, except
// for the tail below.
struct QueryBlock {
    int batch, head, m0;
};

// n / d and n % d with d's FattnFastDiv (0 <= n < 2^31): a 32 × 32 multiply, a shift and a
// multiply-subtract.
struct QuotRem {
    int q, r;
};
__device__ __forceinline__ QuotRem fast_divmod(int n, int d, const FattnFastDiv& f) {
    const int q = static_cast<int>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * f.mul) >> (31 + f.shift));
    return QuotRem{q, n - q * d};
}

// Tile `tile`'s block in that order, with the last `tail_pairs` (batch, head) pairs' tiles in
// weight order across those pairs: tile `head_tiles + i` is pair `pairs - tail_pairs + i %
// tail_pairs`'s query block `num_m - 1 - i / tail_pairs` (under a right-bounded mask a block's
// cost grows with its row, so these come heaviest first and a drawn grid ends on its lightest
// tiles); the tiles before them keep the plain order (all of them when tail_pairs <= 0).
// `by_m`, `by_heads` and `by_pairs` give a non-negative int's quotient and remainder by num_m,
// p.heads and tail_pairs: `/` and `%` in query_block_tail (the sm_80 kernel, whose code they
// leave as it was), the launch's FattnFastDiv in query_block_tail_fast (the Hopper forward,
// whose tiles name their block per item).
template <class ByM, class ByHeads, class ByPairs>
__device__ __forceinline__ QueryBlock query_block_tail_by(const FattnParams& p, int block_m, int tile, int tail_pairs,
                                                          ByM by_m, ByHeads by_heads, ByPairs by_pairs) {
    const int num_m = (p.seq_q + block_m - 1) / block_m;
    const int pairs = p.batch * p.heads;
    const int head_tiles = (pairs - tail_pairs) * num_m;
    int bh, m_block;
    if (tail_pairs <= 0 || tile < head_tiles) {
        const QuotRem t = by_m(tile, num_m);
        bh = t.q;
        m_block = num_m - 1 - t.r;
    } else {
        const QuotRem t = by_pairs(tile - head_tiles);
        bh = pairs - tail_pairs + t.r;
        m_block = num_m - 1 - t.q;
    }
    const QuotRem h = by_heads(bh);
    return QueryBlock{h.q, h.r, m_block * block_m};
}
__device__ __forceinline__ QueryBlock query_block_tail(const FattnParams& p, int block_m, int tile, int tail_pairs) {
    return query_block_tail_by(
        p, block_m, tile, tail_pairs,
        [](int n, int num_m) {
            const unsigned u = static_cast<unsigned>(n), d = static_cast<unsigned>(num_m);
            return QuotRem{static_cast<int>(u / d), static_cast<int>(u % d)};
        },
        [&p](int n) { return QuotRem{n / p.heads, n % p.heads}; },
        [tail_pairs](int n) { return QuotRem{n / tail_pairs, n % tail_pairs}; });
}
__device__ __forceinline__ QueryBlock query_block_tail_fast(const FattnHopperParams& hp, int block_m, int tile,
                                                            int tail_pairs) {
    return query_block_tail_by(
        hp.fwd, block_m, tile, tail_pairs, [&hp](int n, int num_m) { return fast_divmod(n, num_m, hp.div_m); },
        [&hp](int n) { return fast_divmod(n, hp.fwd.heads, hp.div_heads); },
        [&hp, tail_pairs](int n) { return fast_divmod(n, tail_pairs, hp.div_pairs); });
}

}  // namespace fattn
