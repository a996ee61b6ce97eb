// Inline-PTX wrappers, one copy of each for every kernel: 16-byte cp.async copies, ldmatrix,
// mma.sync m16n8k16 per 16-bit element type, ex2 and a fresh read of %ctaid.x. Every
// instruction here exists on sm_80 and newer.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace fattn {

// ---- addresses and copies ---------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global→shared copy to a shared-space address. Only the first `src_bytes` (0..16)
// are read, the rest of the 16 bytes is zero-filled; with 0 nothing is read, so `src` then
// only needs to be some valid address.
__device__ __forceinline__ void cp_async_16_to(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
// cp_async_16_to of all 16 bytes with an L2 prefetch-size hint: a miss brings the whole
// aligned kBytes (64, 128 or 256) around `src` into L2 (0: no hint, the plain copy). A lab
// knob for streaming reads (the decode's K/V tiles, kernels/decode_sm80.cu
// FATTN_DECODE_L2_PREFETCH); every kernel builds without it.
template <int kBytes>
__device__ __forceinline__ void cp_async_16_to_prefetch(uint32_t dst, const void* src) {
    static_assert(kBytes == 0 || kBytes == 64 || kBytes == 128 || kBytes == 256, "an L2 prefetch size");
    if constexpr (kBytes == 0) {
        cp_async_16_to(dst, src, 16);
    } else if constexpr (kBytes == 64) {
        asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    } else if constexpr (kBytes == 128) {
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    } else {
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    }
}
// cp_async_16_to of all 16 bytes under an L2 eviction policy made by `l2_evict_first_policy`:
// the line it allocates is the first the L2 evicts. A lab knob for streaming reads (the
// decode's K/V tiles, kernels/decode_sm80.cu FATTN_DECODE_L2_EVICT_FIRST); every kernel
// builds without it.
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}
__device__ __forceinline__ void cp_async_16_to_policy(uint32_t dst, const void* src, uint64_t policy) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "l"(policy));
}
// The same to a generic pointer into shared memory: all 16 bytes when `valid`, else zeros.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
    cp_async_16_to(smem_addr(dst), src, valid ? 16 : 0);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ldmatrix of four 8×8 b16 matrices at a shared-space address (fragment addresses are
// computed as 32-bit offsets), plain and transposed.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// ---- arithmetic -------------------------------------------------------------------------

// 2^x, approximate (ex2.approx.ftz: subnormal inputs and results flush to zero; 2^-inf = 0).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// blockIdx.x through a volatile read, which the compiler cannot merge with an earlier one.
__device__ __forceinline__ unsigned ctaid_x() {
    unsigned x;
    asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
    return x;
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

// ---- lab timer stamps -------------------------------------------------------------------

// %globaltimer in ns and %smid, for the lab builds' stamps (kernels/fwd_sm90.cu
// FATTN_LAB_STAMPS, kernels/decode_sm80.cu FATTN_LAB_DECODE_STAMPS); no default build calls them.
__device__ __forceinline__ unsigned long long lab_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned lab_smid() {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

}  // namespace fattn
