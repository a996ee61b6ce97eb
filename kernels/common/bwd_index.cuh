// The backward's index arithmetic and score transform, shared by kernels/bwd_sm80.cu and
// kernels/bwd_sm90.cu: which rows see a key (the bottom-right causal/window masks inverted),
// a CTA's place in the backward grid (key block, column split, kv split, kv head, batch) and
// the query blocks it walks, the sequence view of dense and packed batches with their
// workspace rows, and the score in log2 units with the softcap's tanh for its derivative.
// Host-callable where lab/bwd/bwd_selfcheck.cu tests it.
#pragma once

#include <math_constants.h>
#include <stdint.h>

#include "mask.cuh"
#include "params.cuh"

namespace fattn {
namespace bwd {

// The rows that see key j: the half-open [lo, hi) clamped to [0, seq_q); empty for j >= seq_k.
// Row i sees j iff lo(i) <= j < hi(i) (fattn::key_range), i.e. with diag(i) = i + sk - sq:
// j < diag(i) + wr + 1 ⟺ i >= j - (sk - sq) - wr, and j >= diag(i) - wl ⟺ i <= j - (sk - sq) + wl.
// Both bounds grow with j. The host guarantees seq_q + seq_k < 2^31, so nothing overflows.
struct RowRange {
    int lo, hi;
};
__host__ __device__ __forceinline__ RowRange rows_seeing_key(int seq_q, int seq_k, int window_left, int window_right,
                                                             int j) {
    if (j < 0 || j >= seq_k) return RowRange{0, 0};
    const int c = j - (seq_k - seq_q);  // the row whose diagonal is j
    int lo = window_right < 0 ? 0 : c - window_right;
    int hi = window_left < 0 ? seq_q : c + window_left + 1;
    lo = lo < 0 ? 0 : (lo > seq_q ? seq_q : lo);
    hi = hi < lo ? lo : (hi > seq_q ? seq_q : hi);
    return RowRange{lo, hi};
}
__device__ __forceinline__ RowRange rows_seeing_key(const FattnParams& p, int j) {
    return rows_seeing_key(p.seq_q, p.seq_k, p.window_left, p.window_right, j);
}

// This CTA's place in the 1-D grid: key block fastest (the CTAs that run together share one
// head's Q/dO in L2; under a causal mask the heaviest key blocks of a head come first), then
// column split, kv split, kv head, batch. The host sizes the grid with the same order.
struct BwdCta {
    int b, kvh, n0, d_off, h_first;
    // The query blocks [mb_begin, mb_begin + nm) hold every row that sees a key of the block.
    int mb_begin, nm;
    // Work items: heads_per_split × nm, head-major.
    int items;
};
//
// Lightest last (`tail_groups` T > 0, FattnParams::tail_groups; dense grids of `num_blocks`
// = groups · key blocks CTAs): the last T groups' CTAs go key block by key block across those
// groups (every group's key block 0, then every group's key block 1, ...), so that under a
// causal mask the grid ends on the lightest key blocks instead of the last groups' heaviest.
__host__ __device__ __forceinline__ BwdCta bwd_cta(int block, int seq_q, int seq_k, int kv_heads, int kv_group,
                                                   int window_left, int window_right, int kv_splits,
                                                   int heads_per_split, int block_n, int block_m, int d_splits,
                                                   int d_out, int num_blocks = 0, int tail_groups = 0) {
    const int nkb = (seq_k + block_n - 1) / block_n;
    BwdCta c;
    const int groups = num_blocks / nkb;
    const int tail = tail_groups < groups ? tail_groups : groups;
    int kb;
    if (tail > 0 && block >= (groups - tail) * nkb) {
        const int i = block - (groups - tail) * nkb;
        kb = i / tail;
        block = groups - tail + i % tail;
    } else {
        kb = block % nkb;
        block /= nkb;
    }
    const int dh = block % d_splits;
    block /= d_splits;
    const int split = block % kv_splits;
    block /= kv_splits;
    c.kvh = block % kv_heads;
    c.b = block / kv_heads;
    c.n0 = kb * block_n;
    c.d_off = dh * d_out;
    c.h_first = c.kvh * kv_group + split * heads_per_split;
    // Rows seeing keys [n0, n1): [lo(n0), hi(n1 - 1)), since both bounds grow with the key
    // and consecutive keys' row ranges touch (wl, wr >= 0, or unbounded).
    const int n_last = (c.n0 + block_n < seq_k ? c.n0 + block_n : seq_k) - 1;
    const RowRange first = rows_seeing_key(seq_q, seq_k, window_left, window_right, c.n0);
    const RowRange last = rows_seeing_key(seq_q, seq_k, window_left, window_right, n_last);
    c.mb_begin = first.lo / block_m;
    c.nm = last.hi > first.lo ? (last.hi + block_m - 1) / block_m - c.mb_begin : 0;
    c.items = c.nm * heads_per_split;
    return c;
}

// ---- the sequence of a CTA: dense batch entry or packed (varlen) sequence ---------------
//
// Packed batches (FattnParams::cu_seqlens_q/k not null): sequence b owns q/o/dO rows
// cu_q[b]..cu_q[b+1] and k/v rows cu_k[b]..cu_k[b+1] of rank-3 tensors (batch strides 0);
// masks align bottom-right per sequence, and the multimodal ranges of sequence b
// (FattnParams::mm_ranges, [start, end) key positions) widen its rows' visible keys. The f32
// workspaces hold, per head, the sequences one after another, sequence b from row
// packed_ws_base(cu[b], b): at least 128 padding rows apart (whole query and key blocks read
// and added without tests), 32-byte aligned (16-byte cp.async of lse/D). The host sizes them
// with total + kPackedGap · batch rows per head rounded up to 8 (FattnBwdParams::ws_rows_q/k),
// so that every head's rows start 32-byte aligned too.
constexpr int kPackedGap = 136;
__host__ __device__ __forceinline__ int64_t packed_ws_base(int cu, int b) {
    return (static_cast<int64_t>(cu) + static_cast<int64_t>(b) * kPackedGap) & ~static_cast<int64_t>(7);
}

// i32 where the item loop reads them (registers are the main kernel's limit): the host checks
// that rows and workspace rows of (batch, heads) fit.
struct SeqView {
    int sq, sk;         // this sequence's query and key lengths
    int q_row0;         // its first q/o/dO row (packed; 0 dense, where batch strides apply)
    int k_row0;         // its first k/v row (packed; 0 dense)
    int64_t kout_row0;  // its first row of the contiguous dk/dv outputs
    int ws_q0;          // workspace row of (head 0, row 0): + h · ws_rows_q + row
    int64_t ws_k0;      // split dK/dV accumulator row of (kv head 0, key 0): + kvh · ws_rows_k + key
    const int32_t* ranges;  // max_mm_ranges [start, end) pairs, or null
};
// kPacked: the packed entry point (`_varlen`), which reads cu_seqlens; the dense one keeps
// the lengths in param space (compile-time known layout, no multimodal ranges: the host
// refuses ranges on dense batches), so that the packed path's registers never change the
// dense kernel's allocation.
template <bool kPacked>
__device__ __forceinline__ SeqView seq_view(const FattnBwdParams& bp, int b) {
    const FattnParams& p = bp.fwd;
    SeqView s;
    if constexpr (kPacked) {
        const int q0 = p.cu_seqlens_q[b], k0 = p.cu_seqlens_k[b];
        s.sq = p.cu_seqlens_q[b + 1] - q0;
        s.sk = p.cu_seqlens_k[b + 1] - k0;
        s.q_row0 = q0;
        s.k_row0 = k0;
        s.kout_row0 = k0;
        s.ws_q0 = static_cast<int>(packed_ws_base(q0, b));
        s.ws_k0 = packed_ws_base(k0, b);
    } else {
        s.sq = p.seq_q;
        s.sk = p.seq_k;
        s.q_row0 = 0;
        s.k_row0 = 0;
        s.kout_row0 = static_cast<int64_t>(b) * p.seq_k;
        s.ws_q0 = b * p.heads * bp.ws_rows_q;
        s.ws_k0 = static_cast<int64_t>(b) * p.kv_heads * bp.ws_rows_k;
    }
    s.ranges = (kPacked && p.mm_ranges != nullptr && p.max_mm_ranges > 0)
                   ? p.mm_ranges + static_cast<int64_t>(b) * p.max_mm_ranges * 2
                   : nullptr;
    return s;
}

// The rows of the sequence that see key j, with its multimodal ranges: a row whose diagonal
// lies in a range [s, e) that holds j sees j too. In diagonal positions the window's rows of
// j, [j - wr, j + wl], and each such range hold j, so their union is one interval (the hull);
// it is clamped to [0, sq) once, after the union. Without ranges: rows_seeing_key.
__device__ __forceinline__ RowRange rows_seeing_key_mm(const SeqView& sv, int window_left, int window_right,
                                                       int max_ranges, int j) {
    if (sv.ranges == nullptr) return rows_seeing_key(sv.sq, sv.sk, window_left, window_right, j);
    if (j < 0 || j >= sv.sk) return RowRange{0, 0};
    const int off = sv.sk - sv.sq;  // row = diagonal - off
    const int c = j - off;
    int lo = window_right < 0 ? 0 : c - window_right;
    int hi = window_left < 0 ? sv.sq : c + window_left + 1;
    for (int r = 0; r < max_ranges; ++r) {
        const int s = sv.ranges[2 * r], e = sv.ranges[2 * r + 1];
        if (s <= j && j < e) {
            lo = min(lo, s - off);
            hi = max(hi, e - off);
        }
    }
    lo = lo < 0 ? 0 : (lo > sv.sq ? sv.sq : lo);
    hi = hi < lo ? lo : (hi > sv.sq ? sv.sq : hi);
    return RowRange{lo, hi};
}

// Sets cta's query blocks (mb_begin, nm, items) for its sequence: every row that sees a key
// of [n0, n0 + block_n) lies in them. Window part as bwd_cta; each range that meets the block
// adds the rows whose diagonal it holds (a superset is fine: masked elements are zeroed).
__device__ __forceinline__ void cta_rows(BwdCta& c, const SeqView& sv, int window_left, int window_right,
                                         int max_ranges, int heads_per_split, int block_n, int block_m) {
    int lo = 0, hi = 0;
    if (c.n0 < sv.sk) {
        const int n_last = (c.n0 + block_n < sv.sk ? c.n0 + block_n : sv.sk) - 1;
        lo = rows_seeing_key(sv.sq, sv.sk, window_left, window_right, c.n0).lo;
        hi = rows_seeing_key(sv.sq, sv.sk, window_left, window_right, n_last).hi;
        if (sv.ranges != nullptr) {
            const int off = sv.sk - sv.sq;
            bool any = hi > lo;
            for (int r = 0; r < max_ranges; ++r) {
                const int s = sv.ranges[2 * r], e = sv.ranges[2 * r + 1];
                if (s < e && s <= n_last && c.n0 < e) {
                    const int rlo = max(0, s - off), rhi = min(sv.sq, e - off);
                    if (rlo < rhi) {
                        lo = any ? min(lo, rlo) : rlo;
                        hi = any ? max(hi, rhi) : rhi;
                        any = true;
                    }
                }
            }
        }
    }
    c.mb_begin = lo / block_m;
    c.nm = hi > lo ? (hi + block_m - 1) / block_m - c.mb_begin : 0;
    c.items = c.nm * heads_per_split;
}

// True when every row in [r0, r1] of the sequence sees every key in [n0, n1) by its window
// alone (ranges only add keys): no mask needed.
__device__ __forceinline__ bool block_fully_visible_seq(const SeqView& sv, int window_left, int window_right, int r0,
                                                        int r1, int n0, int n1) {
    const int off = sv.sk - sv.sq;
    const int lo_last = window_left < 0 ? 0 : r1 + off - window_left;
    const int hi_first = window_right < 0 ? sv.sk : r0 + off + window_right + 1;
    return r1 < sv.sq && n1 <= sv.sk && n0 >= lo_last && n1 <= hi_first;
}

// A score in log2 units (softcap then ALiBi), the same rounding as fattn::score_log2 in
// common/mask.cuh, and the softcap's tanh (0 without softcap) for the derivative, which
// score_log2 does not return.
__device__ __forceinline__ float mod_score_log2(const FattnParams& p, float dot, float alibi_log2, int rel,
                                                float& tanh_out) {
    float x;
    if (p.softcap_log2 > 0.f) {
        const float th = tanhf(dot * p.softcap_inv_scaled);
        tanh_out = th;
        x = p.softcap_log2 * th;
    } else {
        tanh_out = 0.f;
        x = dot * p.scale_log2;
    }
    // rel = row + sk - sq - key.
    if (alibi_log2 != 0.f) x -= alibi_log2 * fabsf(static_cast<float>(rel));
    return x;
}

}  // namespace bwd
}  // namespace fattn
