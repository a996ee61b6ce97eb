// Which keys a query row sees (the bottom-right causal/window masks) and the score
// transform (softcap, then ALiBi), in log2 units, as src/problem.rs and src/reference.rs
// define them: written once here for every kernel.
#pragma once

#include <math_constants.h>

#include "params.cuh"

namespace fattn {

// The keys one query row may see, as the half-open range [lo, hi), lo >= 0 and hi <= seq_k,
// lo <= hi whenever the row sees a key. src/problem.rs (`Problem::key_range`) also clamps
// hi to [lo, seq_k]; the two agree on every key (`contains`) for any windows, and on both
// bounds whenever the row sees a key. With the windows src/problem.rs normalizes (-1, or
// 0 <= left < seq_k - 1, 0 <= right < seq_q - 1) hi < lo only when hi < 0 (the row's window
// ends before key 0), where the clamped form gives hi = lo = 0: an empty range either way.
// i32 arithmetic: the host checks that seq_k + window_right fits (src/cuda/mod.rs).
struct KeyRange {
    int lo, hi;
    __device__ __forceinline__ bool contains(int j) const { return j >= lo && j < hi; }
};
__device__ __forceinline__ KeyRange key_range(const FattnParams& p, int row) {
    const int diag = row + p.seq_k - p.seq_q;
    KeyRange r;
    r.lo = p.window_left < 0 ? 0 : max(0, diag - p.window_left);
    r.hi = p.window_right < 0 ? p.seq_k : min(p.seq_k, diag + p.window_right + 1);
    return r;
}

// The keys any row in [row_first, row_last] may see: [lo(row_first), hi(row_last)), since
// both bounds grow with the row. Empty (lo >= hi) when the rows see nothing.
__device__ __forceinline__ KeyRange block_key_range(const FattnParams& p, int row_first, int row_last) {
    return KeyRange{key_range(p, row_first).lo, key_range(p, row_last).hi};
}

// True when every row in [row_first, row_last] sees every key in [n0, n1): no mask needed.
__device__ __forceinline__ bool block_fully_visible(const FattnParams& p, int row_first, int row_last, int n0,
                                                    int n1) {
    return n1 <= p.seq_k && n0 >= key_range(p, row_last).lo && n1 <= key_range(p, row_first).hi;
}

// The key blocks of width bn that every row in [row_first, row_last] sees whole, as block
// indices [lo, hi): block nb passes block_fully_visible(nb · bn, nb · bn + bn) exactly when
// lo <= nb < hi, given `first` = the key range of row_first, `last` = that of row_last and
// len_k the keys there are. n0 >= last.lo (last.lo >= 0) <=> nb >= ceil(last.lo / bn); n1 <=
// min(len_k, first.hi) <=> nb < floor(min(len_k, first.hi) / bn), which no nb >= 0 meets when
// that bound is negative. Computed once per tile, so that a key block's test is two compares
// of registers instead of the ranges' arithmetic on parameters (the Hopper kernel's loop).
struct BlockSpan {
    int lo, hi;
    __device__ __forceinline__ bool contains(int nb) const { return nb >= lo && nb < hi; }
};
__device__ __forceinline__ BlockSpan fully_visible_blocks(int len_k, KeyRange first, KeyRange last, int bn) {
    return BlockSpan{(last.lo + bn - 1) / bn, max(0, min(len_k, first.hi)) / bn};
}

// ---- per sequence (packed batches) ----------------------------------------------------------
//
// The same masks for one sequence of a packed batch: its own lengths (bottom-right per
// sequence), and its multimodal prefix ranges: a row whose diag lies in [s, e) also sees every
// key of [s, e). diag is then a key and the window holds it, so the union is one range, and
// both bounds still grow with the row (a range holding diag(i) holds every later diag up to
// its end), so block_key_range and block_fully_visible stay exact supersets/tests.
struct SeqMask {
    int len_q, len_k;
    // This sequence's (max_mm_ranges, 2) ranges, or null: none (always null when dense, which
    // removes the loop at compile time).
    const int32_t* ranges;
    __device__ __forceinline__ int diag(int row) const { return row + len_k - len_q; }
};
// The dense problem's mask: seq_q/seq_k, no ranges.
__device__ __forceinline__ SeqMask dense_mask(const FattnParams& p) { return SeqMask{p.seq_q, p.seq_k, nullptr}; }
// Sequence b of a packed batch, of lengths len_q/len_k.
__device__ __forceinline__ SeqMask packed_mask(const FattnParams& p, int b, int len_q, int len_k) {
    return SeqMask{len_q, len_k, p.mm_ranges == nullptr ? nullptr : p.mm_ranges + 2 * b * p.max_mm_ranges};
}

// The union of a row's window range r with the sequence's multimodal prefix ranges that hold
// its diag, out of line, for the sm_80 kernels: once per kernel instead of once per call site.
// Inlined, every row's mask carried its own copy of the loop (about 1 100 of the 7 728 SASS
// instructions of fattn_fwd_bf16_d128_varlen, and its spills); the call runs only for
// sequences that have ranges. The Hopper kernels (compute_90a) keep the loop inline, as it was.
__device__ __noinline__ KeyRange add_ranges_call(const int32_t* ranges, int n, int diag, KeyRange r) {
    for (int i = 0; i < n; ++i) {
        const int s = ranges[2 * i], e = ranges[2 * i + 1];
        if (s <= diag && diag < e) {
            r.lo = min(r.lo, s);
            r.hi = max(r.hi, e);
        }
    }
    return r;
}
__device__ __forceinline__ KeyRange key_range(const FattnParams& p, const SeqMask& m, int row) {
    const int diag = m.diag(row);
    KeyRange r;
    r.lo = p.window_left < 0 ? 0 : max(0, diag - p.window_left);
    r.hi = p.window_right < 0 ? m.len_k : min(m.len_k, diag + p.window_right + 1);
    if (m.ranges != nullptr) {
#if __CUDA_ARCH__ >= 900
        for (int i = 0; i < p.max_mm_ranges; ++i) {
            const int s = m.ranges[2 * i], e = m.ranges[2 * i + 1];
            if (s <= diag && diag < e) {
                r.lo = min(r.lo, s);
                r.hi = max(r.hi, e);
            }
        }
#else
        r = add_ranges_call(m.ranges, p.max_mm_ranges, diag, r);
#endif
    }
    return r;
}
__device__ __forceinline__ KeyRange block_key_range(const FattnParams& p, const SeqMask& m, int row_first,
                                                    int row_last) {
    return KeyRange{key_range(p, m, row_first).lo, key_range(p, m, row_last).hi};
}
__device__ __forceinline__ bool block_fully_visible(const FattnParams& p, const SeqMask& m, int row_first,
                                                    int row_last, int n0, int n1) {
    return n1 <= m.len_k && n0 >= key_range(p, m, row_last).lo && n1 <= key_range(p, m, row_first).hi;
}

// ---- the score transform ------------------------------------------------------------------
//
// s = scale · q·k; with a softcap c, s = c · tanh(s / c); with ALiBi, s -= slope · |diag - key|
// (diag = row + seq_k - seq_q); kernels keep s in log2 units (× log2 e) so that the softmax
// is exp2. Two roundings of that one formula exist, each bit-for-bit what its kernels have
// always computed; their results differ by a few ulp of the score.

// Prefill (kernels/fwd_sm80.cu): the constants folded on the host (scale_log2,
// softcap_inv_scaled, softcap_log2), the slope passed as slope · log2 e (0 without ALiBi).
// Plain instances skip this and fold scale_log2 into their exp2.
__device__ __forceinline__ float score_log2(const FattnParams& p, float dot, float alibi_slope_log2, int row,
                                            int key) {
    float x = p.softcap_log2 > 0.f ? p.softcap_log2 * tanhf(dot * p.softcap_inv_scaled) : dot * p.scale_log2;
    if (alibi_slope_log2 != 0.f) {
        x -= alibi_slope_log2 * fabsf(static_cast<float>(row + p.seq_k - p.seq_q - key));
    }
    return x;
}

// The same with the row's diagonal given (packed sequences: row + len_k - len_q).
__device__ __forceinline__ float score_log2_diag(const FattnParams& p, float dot, float alibi_slope_log2, int diag,
                                                 int key) {
    float x = p.softcap_log2 > 0.f ? p.softcap_log2 * tanhf(dot * p.softcap_inv_scaled) : dot * p.scale_log2;
    if (alibi_slope_log2 != 0.f) x -= alibi_slope_log2 * fabsf(static_cast<float>(diag - key));
    return x;
}

// Decode (kernels/decode_sm80.cu): the formula in natural units, then × log2 e; the slope
// as given (0 without ALiBi), the row's diagonal precomputed. Kept apart from score_log2:
// in that form the d64 `_mod` decode instances need 134 registers instead of 126 (ptxas
// 13.0, sm_90), over the 128 that keep four blocks on an SM, which would change their
// occupancy and with it the split count.
__device__ __forceinline__ float score_scaled_log2(const FattnParams& p, float dot, float alibi_slope, int diag,
                                                   int key) {
    float x = dot * p.scale;
    if (p.softcap > 0.f) x = p.softcap * tanhf(x / p.softcap);
    x -= alibi_slope * (float)abs(diag - key);
    return x * CUDART_L2E_F;
}

}  // namespace fattn
