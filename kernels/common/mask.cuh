// Which keys a query row sees (the bottom-right causal/window masks) and the score
// transform (softcap, then ALiBi), in log2 units, as src/problem.rs and src/reference.rs
// define them: written once here for every kernel.
#pragma once

#include "params.cuh"

namespace fattn {

// The keys one query row may see, as the half-open range [lo, hi), lo >= 0 and hi <= seq_k.
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

// softcap then ALiBi on a raw dot product, in log2 units (scaled by log2 e).
__device__ __forceinline__ float modified_score_log2(const FattnParams& p, float dot, float alibi_slope_log2,
                                                     int row, int key) {
    float x = p.softcap_log2 > 0.f ? p.softcap_log2 * tanhf(dot * p.softcap_inv_scaled) : dot * p.scale_log2;
    if (alibi_slope_log2 != 0.f) {
        x -= alibi_slope_log2 * fabsf(static_cast<float>(row + p.seq_k - p.seq_q - key));
    }
    return x;
}

}  // namespace fattn
