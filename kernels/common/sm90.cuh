// Hopper (sm_90a) building blocks of kernels/fwd_sm90.cu, written once: mbarriers, TMA tile
// loads (cp.async.bulk.tensor), stmatrix stores, wgmma shared-memory descriptors and fences,
// and register reallocation between warpgroups (setmaxnreg). The wgmma instructions themselves
// are in wgmma.cuh (generated). Every instruction here needs sm_90 (setmaxnreg and wgmma: sm_90a).
#pragma once

#include <stdint.h>

#include "params.cuh"
#include "ptx.cuh"

namespace fattn {
namespace sm90 {

using TmaDesc = FattnTmaDesc;

// ---- mbarriers ------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialized barriers visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// This thread's arrival, plus `bytes` more that the transactions of this phase will deliver.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed (phases count from 0).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t addr = smem_addr(bar);
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
}

// mbar_wait for a thread with nothing else to do (the producer): each try_wait may suspend the
// thread for up to `kSuspendNs` until the phase completes, instead of returning at once, so
// that a waiting producer warp does not take its scheduler's issue slots from the consumer
// warps beside it (session 48: without the hint its retry loop was 7% of the d128 kernel's
// instructions, all on one of the SM's four schedulers).
// kCluster: the phase completes with arrivals from other CTAs of the cluster too
// (mbar_arrive_remote), whose released accesses the wait acquires at cluster scope.
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait_idle(uint64_t* bar, uint32_t parity) {
    constexpr uint32_t kSuspendNs = 1000000;
    const uint32_t addr = smem_addr(bar);
    uint32_t done;
    do {
        if constexpr (kCluster) {
            asm volatile(
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2, %3;\n"
                "selp.u32 %0, 1, 0, p;\n}\n"
                : "=r"(done)
                : "r"(addr), "r"(parity), "n"(kSuspendNs)
                : "memory");
        } else {
            asm volatile(
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}\n"
                : "=r"(done)
                : "r"(addr), "r"(parity), "n"(kSuspendNs)
                : "memory");
        }
    } while (!done);
}

// ---- thread-block clusters (pairs) -------------------------------------------------------------

// This thread's arrival on the cluster barrier, releasing its earlier writes (the barriers it
// initialized) to the cluster; each arrival is followed by one cluster_wait before exit.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
// Waits until every thread of the cluster has arrived, acquiring their released writes.
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
// The shared::cluster address of this CTA's shared-memory address `addr` in CTA `rank`.
__device__ __forceinline__ uint32_t map_to_rank(uint32_t addr, uint32_t rank) {
    uint32_t out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}
// This thread's arrival on the mbarrier at `bar`'s offset in CTA `rank` of the cluster: a
// stage of a ring that CTA's TMA multicast writes into this CTA's shared memory, whose reads
// here (wgmma operands) have completed (wgmma_wait) before the arrival is issued, so nothing
// of this CTA's is left for the arrival to order. The default semantics (release at CTA
// scope), as CUTLASS's ClusterBarrier::arrive(cta_id): session 49 call 4 measured
// `.release.cluster` here at +20% on the d128 2048 row (a cluster-scope fence before each of a
// warp's two arrivals per key block) and this form 1.4% faster than no multicast.
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, uint32_t rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(map_to_rank(smem_addr(bar), rank)) : "memory");
}
// 16 bytes into another CTA's shared memory (shared::cluster address `dst`); their arrival
// completes 16 bytes of the transaction count of that CTA's mbarrier at `bar` (shared::cluster).
__device__ __forceinline__ void st_async_v4(uint32_t dst, float a, float b, float c, float d, uint32_t bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(dst),
                 "f"(a), "f"(b), "f"(c), "f"(d), "r"(bar)
                 : "memory");
}

// ---- TMA --------------------------------------------------------------------------------------

__device__ __forceinline__ void prefetch_tma_desc(const TmaDesc* desc) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(desc)) : "memory");
}
// One box of a 4-D tensor map at coordinates (c0, c1, c2, c3) (innermost first) into shared
// memory at `dst`; its bytes complete on `bar`. Out-of-bounds elements arrive as zeros and
// count toward the bytes like the rest of the box.
__device__ __forceinline__ void tma_load_4d(void* dst, const TmaDesc* desc, uint64_t* bar, int c0, int c1, int c2,
                                            int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
        "[%6];\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(desc)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar))
        : "memory");
}
// tma_load_4d, the box written at `dst`'s offset into the shared memory of every CTA of the
// cluster in `cta_mask` (bit r: rank r), each completing its bytes on its own mbarrier at
// `bar`'s offset: one L2 read for several CTAs.
__device__ __forceinline__ void tma_load_4d_multicast(void* dst, const TmaDesc* desc, uint64_t* bar, int c0, int c1,
                                                      int c2, int c3, uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
        "%3, %4, %5}], [%6], %7;\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(desc)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar)), "h"(cta_mask)
        : "memory");
}

// One box of shared memory at `src` (the layout a load of the same box writes: 1 KiB-aligned
// for the 128-byte swizzle) into a 4-D tensor map's tensor at (c0, c1, c2, c3), innermost
// first; elements outside the tensor are not written. It joins this thread's bulk
// async-group: commit it with bulk_commit_group, and keep `src` unchanged until
// bulk_wait_group_read<0> has returned in this thread.
__device__ __forceinline__ void tma_store_4d(const TmaDesc* desc, const void* src, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                     reinterpret_cast<uint64_t>(desc)),
                 "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed bulk groups still read their shared memory
// (their global writes may still be in flight: the kernel's end makes them visible).
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// `bytes` contiguous bytes (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory; they complete on `bar` like a TMA box.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}

// Stores four 8×8 b16 matrices: register r[i] holds matrix i in the mma fragment layout (lane
// l: row l/4, columns 2(l%4) and 2(l%4)+1), and lane 8i + j gives the address of row j of
// matrix i, which receives that row's 8 elements (16 bytes, 16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3])
                 : "memory");
}
// Stores four 8×8 b16 matrices transposed: register r[i] holds matrix i in the mma fragment
// layout (lane l: row l/4, columns 2(l%4) and 2(l%4)+1), and lane 8i + j gives the address of
// row j of the stored matrix i, which receives column j of the fragment (16 bytes).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

// Orders this thread's ordinary shared-memory writes before later async-proxy (TMA, wgmma)
// accesses of the same bytes.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- wgmma ------------------------------------------------------------------------------------

// A shared-memory matrix descriptor for the 128-byte swizzle (the layout a TMA box of 64
// 16-bit elements per row writes): rows of 128 bytes, 8-row atoms of 1024 bytes whose 16-byte
// chunks are XORed with the row within the atom; `addr` must lie in a 1024-byte aligned
// tile. `lbo` and `sbo` in bytes: K-major operands (Q, K) step 1024 bytes per 8 rows (sbo)
// and ignore lbo; the MN-major V steps sbo per 8 keys and lbo per 64 columns (one panel).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    uint64_t d = (addr & 0x3FFFFu) >> 4;
    d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFFu) << 16;
    d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFFu) << 32;
    d |= static_cast<uint64_t>(1) << 62;  // 128-byte swizzle
    return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Ties registers to this point of the program: reads after it cannot move above an earlier
// wgmma_wait (the compiler does not know that wgmma writes its accumulators late).
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// ---- warpgroups ---------------------------------------------------------------------------------

// Register budgets per thread of a warpgroup (every thread of it executes this).
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
// A named barrier among `threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace sm90
}  // namespace fattn
