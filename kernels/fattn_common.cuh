// Shared pieces of the attention kernels: the one parameter struct that crosses the FFI
// boundary (mirrored by `FattnParams` in src/cuda/mod.rs), the inline-PTX wrappers
// (cp.async, ldmatrix, mma.sync, ex2), and the mask/score helpers every kernel uses, so
// that the semantics of REFERENCE.md are written once on the device side.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>
#include <stdint.h>

// Pointers are already offset to the tensors' start; strides are in elements. The head
// dimension is contiguous (stride 1) for q, k, v and o.
struct FattnParams {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    // (batch, heads) f32 slopes, contiguous; null when ALiBi is off.
    const float* alibi_slopes;
    int64_t q_batch_stride, q_seq_stride, q_head_stride;
    int64_t k_batch_stride, k_seq_stride, k_head_stride;
    int64_t v_batch_stride, v_seq_stride, v_head_stride;
    int64_t o_batch_stride, o_seq_stride, o_head_stride;
    int32_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
    // heads / kv_heads: q head h reads kv head h / kv_group.
    int32_t kv_group;
    // Bottom-right windows; -1 = unbounded (causal is right = 0).
    int32_t window_left, window_right;
    // 1 when every q/k/v row start is 16-byte aligned and head_dim % 8 == 0 (cp.async path).
    int32_t vec_in;
    // 1 when every o row start is 16-byte aligned and head_dim % 8 == 0 (16-byte stores).
    int32_t vec_out;
    // softmax_scale · log2(e): scores are kept in log2 units so the softmax uses exp2.
    float scale_log2;
    // softmax_scale / softcap and softcap · log2(e); softcap_log2 == 0 means no softcap.
    float softcap_inv_scaled;
    float softcap_log2;
};
// The Rust mirror asserts the same size.
static_assert(sizeof(FattnParams) == 192, "FattnParams layout changed: update src/cuda/mod.rs");

namespace fattn {

// ---- inline PTX -------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global→shared copy; when `valid` is false the destination is zero-filled and
// nothing is read (src-size 0), so `src` only needs to be some valid address.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// ---- element types ----------------------------------------------------------------------

// One tag per 16-bit input type: the mma instruction and the f32→pair conversion.
struct F16 {
    using T = __half;
    __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    // d += a · b, m16n8k16, f32 accumulators.
    __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
struct BF16 {
    using T = __nv_bfloat16;
    __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

// ---- semantics shared by every kernel -----------------------------------------------------

// The keys one query row may see, as the half-open range [lo, hi) clamped to [0, seq_k).
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
