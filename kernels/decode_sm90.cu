// The split-key decode's combine as its own launch, for compute capability 9.0: merges the
// split partials of kernels/decode_sm80.cu's split kernel (launched with `defer_combine` set,
// so that its blocks store their partials and exit) into the output and the LSE.
//
// What it computes: with per-block partials (`defer_combine` 1), exactly what the split
// kernel's last block computes when it merges in place (`merge_split_partials`, the same code
// and the same mapping of items to lanes), so both ways give the same bits. With per-warp
// partials (`defer_combine` 2: f16/bf16 tiles of ≤ 8 rows, src/cuda/heuristics.rs
// `PER_WARP_PARTIALS_MAX_ROWS`), the split blocks skip their four warps' shared-memory merge
// and this launch merges splits × 4 partials per row (another association: other bits, within
// the same tolerance). Grid (rounds, kv heads × row groups, batch): block x of a tile takes the
// tile's merge rounds x, x + gridDim.x, ... (a round is 128 / P items, P lanes per item), where
// the split kernel's last block takes every round of its tile in turn.
//
// Why a second launch: the in-kernel merge makes every split block fence its partial stores,
// count itself in with an atomic, and the last block read every partial back: a latency chain
// at the end of each tile that ncu put at ~20% of the 2048-key decode row (lab/README.md,
// session 15). Here the split blocks end at their stores, and the combine is launched with
// programmatic stream serialization (PDL, src/cuda/decode.rs): its blocks are scheduled as the
// split kernel's blocks exit, instead of after the grid has completed and the next launch has
// gone through the front end, and `griddepcontrol.wait` holds them until the split kernel's
// writes are visible. The split kernel needs no trigger of its own (a grid that issues no
// `griddepcontrol.launch_dependents` releases its dependents as its blocks exit), so it stays
// compute_80 code; only this file needs sm_90 PTX.
//
// Measured (H100, bf16, d128, criterion medians, the do_bench method; same-call A/B against the
// in-kernel merge, FUSED_ATTN_CUDA_KERNELS=sm80, 3 rounds alternating, session 19 call 2,
// lab/results/s19-decode-pdl-h100/): (1,32,8,4,8192) 28.4-28.5 µs against 32.9 (-13%: its
// 16-row tiles' four merge rounds run in four blocks instead of one after another in the last
// split block); (1,32,8,1,2048) 15.96-15.99 against 16.08-16.15 (-0.9%); (1,32,8,1,32768),
// (8,32,8,1,8192) and (32,32,8,1,4096, one split: no combine) within ±0.4%. Call 3, with
// PyTorch 2.11's SDPA in the same call: 16.05 / 66.93 / 28.68 / 194.5 / 110.6 µs against
// cuDNN's 14.8 / 65.0 / 99.9 / 190.2 / 109.3. compute-sanitizer memcheck, racecheck and
// synccheck of gpu_sanitizer_subset (52 cases through this launch): 0 errors, 0 hazards.
// Per-warp partials (session 20, same call, 3 rounds, lab/results/s20-ab1-h100/): (1,32,8,1,2048)
// 15.6 µs against 16.0 (-3.1%), (1,32,8,1,32768) 65.8 against 66.6 (-1.2%), (8,32,8,1,8192)
// 109.0 against 110.6 (-1.4%); the 16-row tiles of (1,32,8,4,8192) 30.4 against 28.5 (+6.6%),
// so they keep per-block partials. Tests on that pack: gpu_decode, gpu_varlen_paged_decode (both
// generations), memcheck of gpu_sanitizer_subset: 0 errors.
// ncu (session 20 call 7, clocks free, caches flushed, lab/results/s20-head-h100/ncu_*.txt), the
// (1,32,8,1,2048) row: our split kernel 8.1-8.6 µs and this combine 5.3-5.4 µs, against cuDNN's
// split kernel 8.0-8.3 and its reduction 4.0-4.2 (which reads a quarter of our partial bytes:
// one partial per split, not per warp). Per-warp partials since then take 4 partials a lane
// (16 lanes an item at 16 splits: the tile's merge spreads over 16 blocks, 128 in all, each
// reading a quarter of the bytes): (1,32,8,1,2048) 15.4 / 15.5 / 15.5 µs against 15.9 / 15.4 /
// 15.8, the other decode rows within ±0.3% (same-call A/B, 3 rounds, call 8): within the
// spread; kept for the 4× fewer bytes per block.

#include "decode_sm80.cu"

namespace fattn_decode {

template <typename T, int D, bool kPacked>
__device__ __forceinline__ void combine_block(const FattnParams& p) {
    const int kvh = blockIdx.y / p.row_groups, row_group = blockIdx.y % p.row_groups;
    const int b = blockIdx.z;
    // The sequence's bounds come from the launch's index tensors, written before the split
    // kernel started: readable before the wait.
    const BlockSeq sq = block_keys<kPacked>(p, b).seq;
    // Every split block's partial stores are visible after this (the split grid has completed
    // and flushed its memory).
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    merge_split_partials<T, D, kPacked>(p, sq, b, kvh, row_group, blockIdx.x, gridDim.x);
}

// ---- the cluster merge ----------------------------------------------------------------------
//
// With one cluster per tile (the launch's cluster dims are (splits, 1, 1), src/cuda/decode.rs),
// the split blocks merge without a second launch and without global partials: each block
// leaves its partial in its own shared memory (the warps' rescaled accumulators summed, rows ×
// D f32, beside the rows' (max, sum) in block_ml), the cluster barrier publishes them, and block
// `rank` merges items rank, rank + S, ... of the tile (S = splits), reading the S partials of
// its items from the other blocks' shared memory (`mapa` + `ld.shared::cluster`) with
// merge_item, the arithmetic of the combine launch. A second cluster barrier keeps every block
// resident until no block reads its shared memory any more.

// This block's shared-memory address `local` in the shared memory of cluster block `rank`.
__device__ __forceinline__ uint32_t cluster_map(uint32_t local, int rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}
__device__ __forceinline__ float2 ld_cluster_f2(uint32_t addr) {
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
    return v;
}
// Every thread of every block of the cluster: this block's shared-memory writes before it are
// visible to the cluster's reads after it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

template <typename T, int D, bool kPacked>
__device__ void cluster_merge(const FattnParams& p, float* merge_o, const float (&block_ml)[kRows][2],
                              const BlockSeq& sq, int b, int kvh, int row_group) {
    constexpr int kChunks4 = D / 4;
    // The block's partial: the warps' rescaled accumulators summed into warp 0's rows, in place
    // (each element read and written by one thread).
    for (int idx = threadIdx.x; idx < kRows * kChunks4; idx += kThreads) {
        const int row = idx / kChunks4, c4 = idx % kChunks4;
        float4 sum = *reinterpret_cast<const float4*>(merge_o + row * D + 4 * c4);
#pragma unroll
        for (int w = 1; w < kWarps; ++w) {
            const float4 y = *reinterpret_cast<const float4*>(merge_o + (w * kRows + row) * D + 4 * c4);
            sum.x += y.x, sum.y += y.y, sum.z += y.z, sum.w += y.w;
        }
        *reinterpret_cast<float4*>(merge_o + row * D + 4 * c4) = sum;
    }
    cluster_sync();
    // The cluster spans grid x: block rank = split, S blocks.
    const int splits = p.num_splits, rank = blockIdx.x;
    const int rows_valid = min(kRows, p.kv_group * p.seq_q - row_group * kRows);
    const int items = rows_valid * kChunks4;
    const int mine = items > rank ? (items - rank + splits - 1) / splits : 0;  // block-uniform
    int lanes = 1;
    while (lanes < 32 && lanes < splits && mine * lanes * 2 <= kThreads) lanes *= 2;
    const int sub = threadIdx.x % lanes;
    const uint32_t o_base = smem_addr(merge_o), ml_base = smem_addr(&block_ml[0][0]);
    // Every lane runs the same number of rounds, so the shuffles in merge_item see a full warp.
    for (int base = 0; base < mine; base += kThreads / lanes) {
        const int j = base + threadIdx.x / lanes;
        const bool in = j < mine;
        const int item = rank + splits * j;
        const int row = in ? item / kChunks4 : 0, c4 = in ? item % kChunks4 : 0;
        const int r = row_group * kRows + row;
        const bool valid = in && sq.has_row(p, r);
        const uint32_t o_at = o_base + (row * D + 4 * c4) * 4, ml_at = ml_base + row * 8;
        merge_item<T, D, kPacked>(p, sq, b, kvh, r, c4, valid, splits, lanes, sub, [&](int s, float2& ml, float4& x) {
            ml = ld_cluster_f2(cluster_map(ml_at, s));
            x = ld_cluster_f4(cluster_map(o_at, s));
        });
    }
    cluster_sync();
}

}  // namespace fattn_decode

// ---- entry points ------------------------------------------------------------------------
//
// Declared once in src/cuda/instances.rs (Family::DecodeCombine, Arch::Sm90a), one per dtype and
// head dim of the decode instances (the partial rows are the split instance's head dim wide);
// build.rs expands FATTN_INSTANCE_DECODE_COMBINE per instance and checks the launch numbers.
// Dense entry NAME, packed entry NAME_varlen. Grid (merge rounds of a full tile, kv heads × row
// groups, batch): src/cuda/decode.rs `combine_rounds`.

#define FATTN_INSTANCE_DECODE_COMBINE(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)                \
    static_assert(VARIANT == 2, #NAME ": the combine serves plain and _mod splits alike");                      \
    static_assert(fattn_decode::kThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs");      \
    static_assert(fattn_decode::kRows == ROWS, #NAME ": block rows differ from src/cuda/instances.rs");         \
    static_assert(KEYS == 0 && SMEM == 0, #NAME ": the combine reads no keys and has no dynamic shared memory"); \
    static_assert(HEAD_DIM % 4 == 0, #NAME ": items are 4 dims of a partial row");                              \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME(const FattnParams p) {            \
        fattn_decode::combine_block<FATTN_COMBINE_T_##DTYPE, HEAD_DIM, false>(p);                               \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME##_varlen(const FattnParams p) {   \
        fattn_decode::combine_block<FATTN_COMBINE_T_##DTYPE, HEAD_DIM, true>(p);                                \
    }
#define FATTN_COMBINE_T_BF16 __nv_bfloat16
#define FATTN_COMBINE_T_F16 __half
#define FATTN_COMBINE_T_F32 float

// The cluster split kernels: Family::Decode instances of Arch::Sm90a in src/cuda/instances.rs
// (f16/bf16), the same blocks as kernels/decode_sm80.cu's with `cluster_merge` at the end.
// build.rs expands FATTN_INSTANCE_DECODE per instance of this file; the name is
// kernels/decode_sm80.cu's macro, redefined here for this file's instances.
#undef FATTN_INSTANCE_DECODE
#define FATTN_INSTANCE_DECODE(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM) \
    FATTN_DECODE_CLUSTER_ENTRY_##DTYPE(NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)
#define FATTN_DECODE_CLUSTER_ENTRY_BF16(...) FATTN_DECODE_CLUSTER_ENTRY_16(__nv_bfloat16, __VA_ARGS__)
#define FATTN_DECODE_CLUSTER_ENTRY_F16(...) FATTN_DECODE_CLUSTER_ENTRY_16(__half, __VA_ARGS__)
#define FATTN_DECODE_CLUSTER_ENTRY_16(T, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                           \
    FATTN_DECODE_CHECK_GEOMETRY(NAME, VARIANT, THREADS, ROWS, KEYS)                                             \
    static_assert(fattn_decode::Traits<D>::kSmemElems * 2 == SMEM,                                            \
                  #NAME ": smem bytes differ from src/cuda/instances.rs");                                    \
    static_assert(fattn_decode::kRows * D * 4 <= fattn_decode::Traits<D>::kSmemElems * 2,                    \
                  #NAME ": the cluster partial (rows x D f32) fits the block's shared memory");                \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME(const FattnParams p) {          \
        fattn_decode::decode_block<T, D, VARIANT == 1, false, fattn_decode::Traits<D>::kStages, true>(p);     \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME##_varlen(const FattnParams p) { \
        fattn_decode::decode_block<T, D, VARIANT == 1, true, fattn_decode::Traits<D>::kStages, true>(p);      \
    }
