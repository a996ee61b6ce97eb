// Online-softmax pieces that every kernel shares. Scores are in log2 units (mask.cuh), so
// the softmax is exp2. Row layout: an mma.sync m16n8 accumulator row lives on the 4 lanes
// of a quad (lanes 4g .. 4g + 3).
#pragma once

#include <math_constants.h>
#include <stdint.h>

namespace fattn {

// Max / sum over the 4 lanes of a quad, every lane gets the result.
__device__ __forceinline__ float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
    return x;
}
__device__ __forceinline__ float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
    return x;
}

// What is subtracted from a row's scores before exp2 when its running max is m: m, or 0
// while the row has seen no key (m = -inf), so that exp2(-inf - 0) = 0 instead of NaN.
__device__ __forceinline__ float max_ref(float m) { return m == -CUDART_INF_F ? 0.f : m; }

// 1 / l for the final normalization, or 0 for a row that saw no key: it outputs zeros.
__device__ __forceinline__ float inv_row_sum(float l) { return l > 0.f ? 1.f / l : 0.f; }

// A row's log-sum-exp in natural units, ln Σ e^s, from its max m in log2 units and its sum
// l = Σ 2^(x - m): (m + log2 l)·ln 2. -inf for a row that saw no key (l = 0); NaN stays NaN.
__device__ __forceinline__ float row_lse(float m_log2, float l) {
    return l == 0.f ? -CUDART_INF_F : (m_log2 + log2f(l)) * CUDART_LN2_F;
}

// Where row `row` of (batch b, head h) keeps its log-sum-exp: p.lse is (batch, heads, seq_q).
template <class Params>
__device__ __forceinline__ float* lse_slot(const Params& p, int b, int h, int row) {
    return p.lse + (static_cast<int64_t>(b) * p.heads + h) * p.seq_q + row;
}

}  // namespace fattn
