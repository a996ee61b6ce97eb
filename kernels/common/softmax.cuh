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

// 2^x on the FMA and integer pipes instead of the special-function unit (MUFU), for kernels
// whose softmax is bound by the MUFU's 16 exp2 a clock per SM (FlashAttention-4 computes a
// share of its exponentials this way). x = j + f with j = rint(x) and |f| <= 1/2: 2^f by a
// degree-3 polynomial (relative error 1.0e-4 in f32 over [-1/2, 1/2], coefficients fitted
// for relative error), times 2^j built in the exponent bits. 0 for x < -125 and -inf (as
// ex2.approx.ftz flushes what lies below 2^-126), NaN stays NaN (the product with 2^j).
__device__ __forceinline__ float exp2_poly(float x) {
    constexpr float kRound = 12582912.f;  // 1.5 * 2^23: x + kRound holds rint(x) in its low bits
    const float t = x + kRound;
    const float f = x - (t - kRound);
    const float p = fmaf(fmaf(fmaf(0.05500893f, f, 0.24221097f), f, 0.69328290f), f, 1.f);
    // t's bits are 0x4B400000 + j: shifted by 23 only j's bits stay, as 2^j's exponent - 127.
    const float scale = __uint_as_float((__float_as_uint(t) << 23) + 0x3F800000u);
    return x < -125.f ? 0.f : p * scale;
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
