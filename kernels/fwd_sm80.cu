// Attention forward, FlashAttention-2 style, for sm_80 and newer.
//
// What it computes: o = softmax(s) v per (batch, q head, query row), with s the scaled
// dot products after softcap, ALiBi and the bottom-right causal/window masks (src/reference.rs),
// softmax in f32, f32 accumulation. Rows that see no key output zeros.
//
// f16/bf16 (`fattn_fwd_{f16,bf16}_d{D}[_mods]`): one CTA owns kBlockM query rows of one
// (batch, head); each warp owns 16·kMTiles of them. Q goes through shared memory into mma
// A fragments, once (kQInRegs) or per key block where registers are short. K and V tiles
// of kBlockN keys stream through a kStages-deep cp.async pipeline into XOR-swizzled shared
// memory and are read with ldmatrix (V transposed). S = Q·Kᵀ and O += P·V are mma.sync
// m16n8k16 with f32 accumulators; the online softmax stays in registers in log2 units
// (exp2, with softmax_scale·log2 e folded into one multiply). Key blocks that no row of the
// CTA sees are never visited; mask arithmetic runs only on blocks that some row sees
// partially. The output is staged through the (dead) Q tile and written with 16-byte
// stores. Softcap/ALiBi: d64 has a plain instance, which skips that arithmetic entirely, and a
// `_mods` one; every other head dim has one `Both` instance (since session 62), whose
// `mods_and_mask` branches on a run-time `mods_on` (the host's selection condition) once per
// key block. Measured (H200, sm_80 kernels forced, 2 rounds A B / B A, lab/results/
// s62-call1): d128 +0.2% / causal +0.5%, d256 -0.1% / +0.2%, GQA 4096 d128 -0.1% / -0.1%
// against the pairs; the kernel build 32% shorter with the backward's merge (below); merged,
// d64 ran 0.9-1.5% slower (session 61), so it keeps its pair.
// Every ldmatrix address is one XOR and an immediate away from one register per tile
// (frag_addr) and every tile copy is ~3 instructions (load_tile): per-fragment offsets held
// across the loop were what spilled at 32 rows per warp, and 64-bit per-row address
// arithmetic was a quarter of the d128 loop's instructions.
//
// Packed batches (varlen, issue 13): the same entry points run a second instantiation when
// cu_seqlens_q is set. A CTA reads its sequence's offsets and lengths (kv_addr.cuh); the grid
// covers the longest sequence and CTAs past their sequence's end exit at once. Masks align
// bottom-right per sequence and add the multimodal prefix ranges (mask.cuh). Paged K/V come
// through the block table: one lookup per key block when the page size is a multiple of the
// block, one per row otherwise (any page size >= 1). No gather or padding copy. The dense
// instantiation is the dense kernel as it was. Measured (H100, bf16, lab/results/
// varlen-h100-2026-11-23.md): 64 sequences of 100-3991 tokens, 32/8 heads, d128: 340.7 TF/s
// (16.98 ms) against torch FA2 varlen's 348.0 (0.979×); causal 302.7 against 303.4 (0.998×);
// one padded dense call of the same batch: 122.1 / 112.7 TF/s.
//
// d512 (FwdTraits<512>): O of 16 rows × 512 columns does not fit a thread's registers, so two
// warps share 16 rows, each computing the rows' S and owning 256 columns of O; 32 rows and
// 16-key blocks keep the tile at 96 KiB. Not measured yet.
//
// f32 (`fattn_fwd_f32`, and `fattn_fwd_f32_d512` above d256): same algorithm in plain f32 FMA (no TF32, so its error matches
// candle's f32 matmul, which runs cuBLAS without TF32 by default).
//
// Grid: one dimension, (batch·head)-major, query blocks of one head consecutive and
// heaviest (last, for causal) first: the blocks that run together share one head's K/V in
// L2 instead of streaming every head's K/V from DRAM at once.
//
// Tiles (FwdTraits below; every instance fits the 99 KiB that sm_86/sm_89 allow a block):
// d32 and d64: 4 warps × 32 rows, Q in registers, 3 stages. d96 and d128: FA2's d128 shape,
// 4 warps × 32 rows (each K/V fragment feeds two m16 tiles), Q re-read from shared memory,
// 64-key blocks, 2 stages, two CTAs per SM at 255 registers (plain d128 spill-free); d128
// also skips O's rescale when no row of a warp has a new max (kSkipRescale: +4% on average
// over the six d128 rows, −1…+7%; slower at d64/d96/d256). d256: 4 warps × 16 rows, 32-key
// blocks. lab/README.md (v6) has every version measured.
//
// Measured (lab/run.sh, NVIDIA H100 80GB HBM3, bf16, CUDA events, median; torch 2.11 SDPA
// in the same run; lab/results/*-v6.txt), TF/s ours / FA2 backend: (16,16,16,2048,2048,64)
// 319/279, causal 272/251; d128 at 2048: 352/342, causal 301/273; (4,32,32,4096,4096,128)
// 360/335; (1,32,32,16384,16384,128) causal 361/341.

#include "common/grid.cuh"
#include "common/kv_addr.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"
#include "common/softmax.cuh"

namespace fattn {

// ---- tile traits --------------------------------------------------------------------------

template <int kHeadDim_, int kWarps_, int kMTiles_, int kBlockN_, int kStages_, bool kQInRegs_,
          int kMinBlocksPerSM_ = 1, int kDSplit_ = 1>
struct TileConfig {
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kWarps = kWarps_;
    static constexpr int kMTiles = kMTiles_;  // m16 tiles per warp
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kStages = kStages_;
    // Q fragments held in registers for the whole loop, or re-read from the (kept) Q tile
    // with ldmatrix at every key block, which frees kMTiles·D/4 registers for larger tiles.
    static constexpr bool kQInRegs = kQInRegs_;
    // __launch_bounds__ occupancy hint: caps registers at 64K / (kThreads · this).
    static constexpr int kMinBlocksPerSM = kMinBlocksPerSM_;
    // Skip O's rescale (kMTiles·D/2 multiplies per key block) when no row of the warp has a
    // new max: exact, the factor is 1. Costs a vote and a branch that splits the scheduler's
    // region; an instance opts in by redeclaring it (d128, where it measured faster).
    static constexpr bool kSkipRescale = false;
    // Warps that share the same rows, each owning D / kDSplit of O's columns (each computes
    // the rows' full S, which it needs for its softmax): O of 16 rows × 512 columns would be
    // 256 registers per thread.
    static constexpr int kDSplit = kDSplit_;
    static constexpr int kThreads = kWarps * 32;
    static constexpr int kWarpRows = 16 * kMTiles;
    static constexpr int kBlockM = kWarpRows * kWarps / kDSplit;
    static constexpr int kWarpCols = kHeadDim / kDSplit;
    static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks of 8 elements
    static constexpr int kQElems = kBlockM * kHeadDim;
    static constexpr int kKVStageElems = 2 * kBlockN * kHeadDim;  // K then V
    static constexpr int kSmemBytes = (kQElems + kStages * kKVStageElems) * 2;

    static_assert(kHeadDim % 16 == 0, "head dim must be a multiple of the mma k (16)");
    static_assert(kChunksPerRow % 4 == 0, "the swizzle needs rows of a multiple of 4 chunks");
    static_assert(kBlockN % 16 == 0, "key block must be a multiple of 16 (ldmatrix.x4 pairs)");
    static_assert(kStages >= 2, "the pipeline needs at least two stages");
    static_assert(kWarps % kDSplit == 0 && (kDSplit == 1 || kWarpCols % 64 == 0),
                  "a column split gives every warp whole 8-chunk swizzle groups");
    // One build runs on every sm_80+ GPU: sm_86/sm_89 give a block at most 99 KiB.
    static_assert(kSmemBytes <= 99 * 1024, "tile does not fit in shared memory on every sm_80+ GPU");
};

// Per head-dim instance. Registers per thread ≈ Q (kMTiles·D/4, or 4·kMTiles from shared
// memory) + S (kMTiles·kBlockN/2) + O (kMTiles·D/2) + K/V fragments; d128's 4 + 64 + 128 fits
// 255 without spills only with the one-register fragment addressing below. Check with
// `ptxas -arch=sm_90 -v` on the compute_80 PTX (what the driver JITs). Unsupported head
// dims have no specialization and fail to compile.
template <int kHeadDim>
struct FwdTraits;
template <>
struct FwdTraits<32> : TileConfig<32, 4, 2, 64, 3, true> {};
template <>
struct FwdTraits<64> : TileConfig<64, 4, 2, 64, 3, true> {};
template <>
struct FwdTraits<96> : TileConfig<96, 4, 2, 64, 2, false, 2> {};
template <>
struct FwdTraits<128> : TileConfig<128, 4, 2, 64, 2, false, 2> {
    static constexpr bool kSkipRescale = true;
};
template <>
struct FwdTraits<256> : TileConfig<256, 4, 1, 32, 2, false> {};
// d512: two warps per 16 rows, 256 columns of O each; 32 rows × 16-key blocks fit 96 KiB.
template <>
struct FwdTraits<512> : TileConfig<512, 4, 1, 16, 2, false, 1, 2> {};

// Physical chunk index of (row, chunk) in a tile with kChunksPerRow chunks per row. The XOR
// keeps the 8 rows one ldmatrix phase reads in 8 distinct 16-byte bank groups.
template <int kChunksPerRow>
__device__ __forceinline__ int swizzle(int row, int chunk) {
    if constexpr (kChunksPerRow % 8 == 0) {
        return row * kChunksPerRow + (chunk ^ (row & 7));
    } else {
        return row * kChunksPerRow + (chunk ^ ((row >> 1) & 3));
    }
}

// Shared address of this lane's row for an ldmatrix.x4 of the 16×16 block at (row r0, chunk
// c0) of a swizzled tile at `tile`; (r, c) is the lane's part (r < 16, c in {0, 1}), (r0, c0)
// compile-time (r0 a multiple of 8, c0 even). The swizzle XORs the low 3 (or 2) chunk bits
// with bits of the row that r0 does not change, so the address of (r0 + r, c0 + c) is the
// lane's own swizzled address with c0's low bits XORed in and the rest of c0 and r0 added:
// every fragment of a tile is one XOR and an immediate away from one register, instead of
// a hoisted offset per fragment (which spilled at d128 with 32 rows per warp). Needs `tile`
// aligned to 8 rows, which every tile is (the dynamic smem base is 1 KiB aligned).
// kSwizzleBitsOnly: XOR only the chunk bits the swizzle touches, for a `tile` that starts at a
// whole 8-chunk group of its rows (a column split's part of V), not at a row.
template <int CPR, bool kSwizzleBitsOnly = false>
__device__ __forceinline__ uint32_t frag_addr(uint32_t tile, int r, int c, int r0, int c0) {
    // Chunk bits to XOR: those the swizzle touches (3 or 2), or every chunk bit when rows are
    // a power of two chunks (the lane's chunk has no higher bits set, so XOR adds). Either is
    // right; the second keeps the plain d128 instance free of spills under ptxas 13.0.
    constexpr int kLow = (CPR & (CPR - 1)) == 0 && !kSwizzleBitsOnly ? CPR - 1 : CPR % 8 == 0 ? 7 : 3;
    return ((tile + swizzle<CPR>(r, c) * 16) ^ ((c0 & kLow) * 16)) + ((c0 & ~kLow) + r0 * CPR) * 16;
}

// Element-wise fallback of `load_tile` for unaligned rows or head dims that are not a
// multiple of 8. Kept out of line so that its address arithmetic costs the fast path no
// registers.
template <class Cfg, int kRows>
__device__ __noinline__ void load_tile_elementwise(uint16_t* tile, const uint16_t* g, int64_t row_stride, int row0,
                                                   int row_end, int head_dim, int tid) {
    constexpr int kChunks = kRows * Cfg::kChunksPerRow;
    for (int chunk = tid; chunk < kChunks; chunk += Cfg::kThreads) {
        const int r = chunk / Cfg::kChunksPerRow;
        const int c = chunk % Cfg::kChunksPerRow;
        const int row = row0 + r;
        const uint16_t* src = g + static_cast<int64_t>(row) * row_stride + c * 8;
        union {
            uint4 v;
            uint16_t e[8];
        } buf;
#pragma unroll
        for (int e = 0; e < 8; ++e) buf.e[e] = (row < row_end && c * 8 + e < head_dim) ? src[e] : uint16_t(0);
        *reinterpret_cast<uint4*>(tile + swizzle<Cfg::kChunksPerRow>(r, c) * 8) = buf.v;
    }
}

// Copies rows [row0, row0 + kRows) of a (seq, head_dim) matrix into a swizzled tile.
// Rows >= row_end and columns >= head_dim are zero-filled (padding never reads memory).
// `vec` uses 16-byte cp.async; otherwise element loads (unaligned or odd head dims).
// Each thread keeps one column chunk and walks rows kRowStep apart. When kRowStep is a
// multiple of the swizzle period (8 rows), its shared addresses are one base plus
// immediates and its global addresses one pointer plus a row step, and a tile that lies
// wholly before row_end needs no per-row test: ~3 instructions per copy instead of ~25
// (the copies were a quarter of the d128 loop's instructions).
template <class Cfg, int kRows>
__device__ __forceinline__ void load_tile(uint16_t* tile, const uint16_t* g, int64_t row_stride, int row0,
                                          int row_end, int head_dim, bool vec, int tid) {
    constexpr int CPR = Cfg::kChunksPerRow;
    if (!vec) {
        load_tile_elementwise<Cfg, kRows>(tile, g, row_stride, row0, row_end, head_dim, tid);
        return;
    }
    constexpr int kRowStep = Cfg::kThreads / CPR;
    if constexpr (Cfg::kThreads % CPR == 0 && kRowStep % 8 == 0 && kRows % kRowStep == 0) {
        const unsigned c = static_cast<unsigned>(tid) % CPR;
        const unsigned r0 = static_cast<unsigned>(tid) / CPR;
        const bool col_ok = static_cast<int>(c * 8) < head_dim;
        const int src_bytes = col_ok ? 16 : 0;
        const uint32_t dst = smem_addr(tile) + swizzle<CPR>(r0, c) * 16;
        // Column chunks past head_dim read nothing; point them at chunk 0 of their row.
        const uint16_t* src = g + static_cast<int64_t>(row0 + static_cast<int>(r0)) * row_stride + (col_ok ? c * 8 : 0);
        const int64_t step = kRowStep * row_stride;
        if (row0 + kRows <= row_end) {
#pragma unroll
            for (int i = 0; i < kRows / kRowStep; ++i) {
                cp_async_16_to(dst + i * kRowStep * CPR * 16, src + i * step, src_bytes);
            }
        } else {
            const int rows_left = row_end - row0 - static_cast<int>(r0);
#pragma unroll
            for (int i = 0; i < kRows / kRowStep; ++i) {
                const bool ok = i * kRowStep < rows_left;
                cp_async_16_to(dst + i * kRowStep * CPR * 16, ok ? src + i * step : g, ok ? src_bytes : 0);
            }
        }
    } else if constexpr (Cfg::kThreads % CPR == 0) {
        const int c = tid % CPR;
        const int r0 = tid / CPR;
        const bool col_ok = c * 8 < head_dim;
#pragma unroll
        for (int i = 0; i < (kRows + kRowStep - 1) / kRowStep; ++i) {
            const int r = r0 + i * kRowStep;
            if (kRows % kRowStep != 0 && r >= kRows) break;
            const int row = row0 + r;
            const bool ok = col_ok && row < row_end;
            cp_async_16(tile + swizzle<CPR>(r, c) * 8, ok ? g + static_cast<int64_t>(row) * row_stride + c * 8 : g,
                        ok);
        }
    } else {
#pragma unroll
        for (int chunk = tid; chunk < kRows * CPR; chunk += Cfg::kThreads) {
            const int r = chunk / CPR;
            const int c = chunk % CPR;
            const int row = row0 + r;
            const bool ok = row < row_end && c * 8 < head_dim;
            cp_async_16(tile + swizzle<CPR>(r, c) * 8, ok ? g + static_cast<int64_t>(row) * row_stride + c * 8 : g,
                        ok);
        }
    }
}

// Copies keys [n0, n0 + kRows) of a paged sequence into a swizzled tile, each row through the
// block table (`base` is the kv head's start; keys >= len_k and columns >= head_dim read as 0).
// The path for page sizes that are not a multiple of the key block; out of line, so that it
// costs the other paths no registers.
template <class Cfg, int kRows>
__device__ __noinline__ void load_tile_paged(uint16_t* tile, const FattnParams& p, const uint16_t* base,
                                             int64_t block_stride, int64_t seq_stride, const int32_t* table, int n0,
                                             int len_k, bool vec, int tid) {
    constexpr int CPR = Cfg::kChunksPerRow;
    for (int chunk = tid; chunk < kRows * CPR; chunk += Cfg::kThreads) {
        const int r = chunk / CPR;
        const int c = chunk % CPR;
        const int key = n0 + r;
        const uint16_t* src = key < len_k ? kv_key_row(p, base, block_stride, seq_stride, table, 0, key) + c * 8 : base;
        if (vec) {
            cp_async_16(tile + swizzle<CPR>(r, c) * 8, src, key < len_k && c * 8 < p.head_dim);
        } else {
            union {
                uint4 v;
                uint16_t e[8];
            } buf;
#pragma unroll
            for (int e = 0; e < 8; ++e) buf.e[e] = (key < len_k && c * 8 + e < p.head_dim) ? src[e] : uint16_t(0);
            *reinterpret_cast<uint4*>(tile + swizzle<CPR>(r, c) * 8) = buf.v;
        }
    }
}

// kPacked: a packed (varlen) batch, K/V possibly paged (kv_addr.cuh), masks per sequence with
// its multimodal ranges (mask.cuh). The dense instantiation is the dense kernel as it was.
// kMods: the instance has the softcap/ALiBi code; kSwitch: it serves plain problems too, the
// code behind a run-time switch (a `Both` instance, src/cuda/instances.rs).
template <class Cfg, class E, bool kMods, bool kPacked, bool kSwitch>
__device__ __forceinline__ void fwd_tensor_core(const FattnParams& p) {
    constexpr int D = Cfg::kHeadDim;
    constexpr int BM = Cfg::kBlockM;
    constexpr int BN = Cfg::kBlockN;
    constexpr int MT = Cfg::kMTiles;
    constexpr int ST = Cfg::kStages;
    constexpr int CPR = Cfg::kChunksPerRow;
    const float kNegInf = -CUDART_INF_F;

    extern __shared__ __align__(1024) uint4 smem_u4[];
    uint16_t* sQ = reinterpret_cast<uint16_t*>(smem_u4);
    uint16_t* sKV = sQ + Cfg::kQElems;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int g = lane / 4;  // mma fragment row within 8
    const int t = lane % 4;  // mma fragment column pair

    const QueryBlock qb = query_block_tail(p, BM, static_cast<int>(ctaid_x()), p.tail_groups);
    const int b = qb.batch;
    const int h = qb.head;
    const int kvh = h / p.kv_group;
    const int m0 = qb.m0;
    // Packed: this sequence's rows and keys; a query block past its end has nothing to do
    // (the grid covers the longest sequence).
    const SeqSpan span = seq_span<kPacked>(p, b);
    if (kPacked && m0 >= span.len_q) return;
    const SeqMask msk = kPacked ? packed_mask(p, b, span.len_q, span.len_k) : dense_mask(p);
    // Dense: the params themselves, read where used, as the dense kernel always did (holding
    // seq_q/seq_k in registers across the loop made the plain d128 instance spill).
    auto len_q = [&]() {
        if constexpr (kPacked) {
            return msk.len_q;
        } else {
            return p.seq_q;
        }
    };
    auto len_k = [&]() {
        if constexpr (kPacked) {
            return msk.len_k;
        } else {
            return p.seq_k;
        }
    };
    auto row_keys = [&](int row) {
        if constexpr (kPacked) {
            return key_range(p, msk, row);
        } else {
            return key_range(p, row);
        }
    };
    const int m_last = min(m0 + BM, len_q()) - 1;

    const uint16_t* qg = kPacked ? q_seq_rows<uint16_t>(p, span, h) : q_head_rows<uint16_t>(p, b, h);
    // Packed: the kv head's rows of the sequence (unpaged) or of the whole cache (paged).
    const int32_t* table = kPacked ? block_table_row(p, b) : nullptr;
    const uint16_t* kg = kPacked ? static_cast<const uint16_t*>(p.k) + kvh * p.k_head_stride +
                                       (table == nullptr ? span.k0 * p.k_seq_stride : 0)
                                 : k_head_rows<uint16_t>(p, b, kvh);
    const uint16_t* vg = kPacked ? static_cast<const uint16_t*>(p.v) + kvh * p.v_head_stride +
                                       (table == nullptr ? span.k0 * p.v_seq_stride : 0)
                                 : v_head_rows<uint16_t>(p, b, kvh);
    const bool vec_in = p.vec_in != 0;

    const KeyRange keys = KeyRange{row_keys(m0).lo, row_keys(m_last).hi};
    const int nb_begin = keys.lo / BN;
    const int nb_end = keys.hi > keys.lo ? (keys.hi + BN - 1) / BN : nb_begin;

    auto load_kv = [&](int nb, int stage) {
        uint16_t* sK = sKV + stage * Cfg::kKVStageElems;
        if constexpr (!kPacked) {
            // Dense: exactly the code the dense entries have always had (their SASS unchanged).
            load_tile<Cfg, BN>(sK, kg, p.k_seq_stride, nb * BN, len_k(), p.head_dim, vec_in, tid);
            load_tile<Cfg, BN>(sK + BN * D, vg, p.v_seq_stride, nb * BN, len_k(), p.head_dim, vec_in, tid);
        } else if (table == nullptr || p.page_block_size % BN == 0) {
            // Unpaged, or a page-aligned block (its keys lie in one page, consecutive rows
            // there): one copy from a base row. (Two copies of the unrolled tile loads, one per
            // case, had cost each `_varlen` entry about 700 SASS instructions.)
            const uint16_t* kb = kg;
            const uint16_t* vb = vg;
            int row0 = nb * BN;
            int row_end = len_k();
            if (table != nullptr) {
                const int n0 = nb * BN;
                const int page = n0 / p.page_block_size;
                const int64_t blk = table[page];
                const int off = n0 - page * p.page_block_size;
                kb = kg + blk * p.k_batch_stride + off * p.k_seq_stride;
                vb = vg + blk * p.v_batch_stride + off * p.v_seq_stride;
                row0 = 0;
                row_end = msk.len_k - n0;
            }
            load_tile<Cfg, BN>(sK, kb, p.k_seq_stride, row0, row_end, p.head_dim, vec_in, tid);
            load_tile<Cfg, BN>(sK + BN * D, vb, p.v_seq_stride, row0, row_end, p.head_dim, vec_in, tid);
        } else {
            load_tile_paged<Cfg, BN>(sK, p, kg, p.k_batch_stride, p.k_seq_stride, table, nb * BN, msk.len_k, vec_in,
                                     tid);
            load_tile_paged<Cfg, BN>(sK + BN * D, p, vg, p.v_batch_stride, p.v_seq_stride, table, nb * BN, msk.len_k,
                                     vec_in, tid);
        }
    };

    // Q, then the first ST-1 key blocks, one commit group each (empty groups keep counts uniform).
    load_tile<Cfg, BM>(sQ, qg, p.q_seq_stride, m0, len_q(), p.head_dim, vec_in, tid);
    cp_async_commit();
#pragma unroll
    for (int s = 0; s < ST - 1; ++s) {
        if (nb_begin + s < nb_end) load_kv(nb_begin + s, s);
        cp_async_commit();
    }
    cp_async_wait<ST - 1>();
    __syncthreads();

    const int warp_row0 = (warp / Cfg::kDSplit) * Cfg::kWarpRows;
    // This warp's columns of O: [warp_col · DC, (warp_col + 1) · DC).
    constexpr int DC = Cfg::kWarpCols;
    const int warp_col = warp % Cfg::kDSplit;
    // Q as mma A fragments: loaded once when kQInRegs, else per k-step inside the loop.
    constexpr int kQRegSteps = Cfg::kQInRegs ? D / 16 : 1;
    uint32_t qf[MT][kQRegSteps][4];
    const uint32_t sQ_warp = smem_addr(sQ) + warp_row0 * CPR * 16;
    auto load_q_fragment = [&](uint32_t(&frag)[4], int mt, int kk) {
        ldmatrix_x4(frag, frag_addr<CPR>(sQ_warp, lane % 16, lane / 16, mt * 16, kk * 2));
    };
    if constexpr (Cfg::kQInRegs) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) load_q_fragment(qf[mt][kk], mt, kk);
    }

    // This thread's rows: warp_row0 + mt·16 + g + half·8.
    float alibi_log2 = 0.f;
    // A `Both` instance runs plain problems too (one kernel per head dim and dtype, 40% less
    // compile time): they take the plain arithmetic, on the same condition as src/cuda/mod.rs
    // `prefill_needs_mods`, so a row's bits do not depend on the instance. A `_mods` instance
    // (kSwitch false) always takes the softcap/ALiBi arithmetic, as the host picks it.
    const bool mods_on =
        kMods && (!kSwitch || p.softcap > 0.f || p.alibi_slopes != nullptr || !(p.scale > 0.f) ||
                  p.scale_log2 > kFattnPrescaleAboveLog2);
    if (mods_on && p.alibi_slopes != nullptr) alibi_log2 = p.alibi_slopes[b * p.heads + h] * CUDART_L2E_F;

    float o[MT][DC / 8][4];
    float row_max[MT][2];
    float row_sum[MT][2];  // this thread's partial sum; the quad reduces it at the end
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < DC / 8; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.f;
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            row_max[mt][hf] = kNegInf;
            row_sum[mt][hf] = 0.f;
        }
    }

    using STile = float[MT][BN / 8][4];
    // S = Q Kᵀ for one key block.
    auto scores_qk = [&](STile& s, uint32_t sK) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int qk = Cfg::kQInRegs ? kk : 0;
            if constexpr (!Cfg::kQInRegs) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) load_q_fragment(qf[mt][0], mt, kk);
            }
#pragma unroll
            for (int np = 0; np < BN / 16; ++np) {
                uint32_t kf[4];
                // Matrices: keys np·16 + 0-7 (dims kk·16 + 0-7, 8-15), then keys + 8-15, so that
                // each mma's B is a consecutive register pair.
                ldmatrix_x4(kf, frag_addr<CPR>(sK, lane % 8 + (lane / 16) * 8, (lane / 8) % 2, np * 16, kk * 2));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    E::mma(s[mt][2 * np], qf[mt][qk], kf[0], kf[1]);
                    E::mma(s[mt][2 * np + 1], qf[mt][qk], kf[2], kf[3]);
                }
            }
        }
    };
    // Scores. Plain instances keep raw dot products (their max is the max of the scaled
    // scores, since the scale is > 0) and fold the scale into the exp2 argument; `_mods`
    // instances turn them into log2-unit scores first (softcap, ALiBi, any scale). Mask
    // arithmetic runs only on blocks that some row of the CTA sees partially.
    auto mods_and_mask = [&](STile& s, int nb) {
        const int n0 = nb * BN;
        if (mods_on) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int row = m0 + warp_row0 + mt * 16 + g + (e / 2) * 8;
                        const int key = n0 + nt * 8 + 2 * t + e % 2;
                        s[mt][nt][e] = kPacked ? score_log2_diag(p, s[mt][nt][e], alibi_log2, msk.diag(row), key)
                                               : score_log2(p, s[mt][nt][e], alibi_log2, row, key);
                    }
        }
        if (kPacked ? !block_fully_visible(p, msk, m0, m_last, n0, n0 + BN)
                    : !block_fully_visible(p, m0, m_last, n0, n0 + BN)) {
            // The rows' key ranges are recomputed here (a few integer ops on partial blocks
            // only) rather than held across the loop in registers.
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int hf = 0; hf < 2; ++hf) {
                    const KeyRange rk = row_keys(m0 + warp_row0 + mt * 16 + g + hf * 8);
#pragma unroll
                    for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (!rk.contains(n0 + nt * 8 + 2 * t + e)) s[mt][nt][2 * hf + e] = kNegInf;
                }
        }
    };
    const float exp_scale = mods_on ? 1.f : p.scale_log2;
    // Online softmax on one block: new row max, rescale the running sum and O, and S
    // becomes P = exp2(scale·(x - max)) in place.
    auto softmax_step = [&](STile& s) {
        float corr[MT][2];
        bool rescale = false;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                float mx = row_max[mt][hf];
#pragma unroll
                for (int nt = 0; nt < BN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
                mx = quad_max(mx);
                // A row with nothing visible yet keeps max -inf; subtract 0 so exp2 gives 0, not NaN.
                const float base = mx == kNegInf ? 0.f : mx * exp_scale;
                corr[mt][hf] = exp2_approx(fmaf(row_max[mt][hf], exp_scale, -base));
                if (Cfg::kSkipRescale && mx == row_max[mt][hf]) {
                    corr[mt][hf] = 1.f;
                } else {
                    rescale = true;
                }
                row_max[mt][hf] = mx;
                float sum = 0.f;
#pragma unroll
                for (int nt = 0; nt < BN / 8; ++nt) {
                    s[mt][nt][2 * hf] = exp2_approx(fmaf(s[mt][nt][2 * hf], exp_scale, -base));
                    s[mt][nt][2 * hf + 1] = exp2_approx(fmaf(s[mt][nt][2 * hf + 1], exp_scale, -base));
                    sum += s[mt][nt][2 * hf] + s[mt][nt][2 * hf + 1];
                }
                row_sum[mt][hf] = row_sum[mt][hf] * corr[mt][hf] + sum;
                if constexpr (!Cfg::kSkipRescale) {
#pragma unroll
                    for (int dt = 0; dt < DC / 8; ++dt) {
                        o[mt][dt][2 * hf] *= corr[mt][hf];
                        o[mt][dt][2 * hf + 1] *= corr[mt][hf];
                    }
                }
            }
        if (Cfg::kSkipRescale && __any_sync(0xffffffffu, rescale)) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int dt = 0; dt < DC / 8; ++dt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) o[mt][dt][e] *= corr[mt][e / 2];
        }
    };
    // O += P V; the S accumulator layout is the A fragment layout of the next mma.
    auto accumulate_pv = [&](STile& s, uint32_t sV) {
        if constexpr (Cfg::kDSplit > 1) sV += warp_col * (DC / 8) * 16;
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            uint32_t pf[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                pf[mt][0] = E::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                pf[mt][1] = E::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                pf[mt][2] = E::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                pf[mt][3] = E::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < DC / 16; ++dp) {
                uint32_t vf[4];
                ldmatrix_x4_trans(vf, frag_addr<CPR, (Cfg::kDSplit > 1)>(sV, lane % 16, lane / 16, kk * 16, dp * 2));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    E::mma(o[mt][2 * dp], pf[mt], vf[0], vf[1]);
                    E::mma(o[mt][2 * dp + 1], pf[mt], vf[2], vf[3]);
                }
            }
        }
    };

    for (int nb = nb_begin; nb < nb_end; ++nb) {
        const int it = nb - nb_begin;
        // One barrier per block: after it, this block's tile is visible to every warp and
        // every warp is done with the previous block, whose stage the next load refills.
        cp_async_wait<ST - 2>();
        __syncthreads();
        if (nb + ST - 1 < nb_end) load_kv(nb + ST - 1, (it + ST - 1) % ST);
        cp_async_commit();
        const uint32_t sK = smem_addr(sKV + (it % ST) * Cfg::kKVStageElems);
        STile s;
        scores_qk(s, sK);
        mods_and_mask(s, nb);
        softmax_step(s);
        accumulate_pv(s, sK + BN * D * 2);
    }
    cp_async_wait<0>();

    // Normalize, stage this warp's rows in its own part of the Q tile, store 16 bytes at a time.
    // The barrier orders this warp's earlier ldmatrix reads of those rows before the writes
    // (with a column split, the other warps' that read the same Q rows).
    if constexpr (Cfg::kDSplit > 1) {
        __syncthreads();
    } else {
        __syncwarp();
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const float l = quad_sum(row_sum[mt][hf]);
            const float inv = inv_row_sum(l);
            const int r = warp_row0 + mt * 16 + g + hf * 8;
            if (p.lse != nullptr && t == 0 && warp_col == 0 && m0 + r < len_q()) {
                // (batch, head) read again here, only when the LSE is wanted (see below).
                const QueryBlock ql = query_block_tail(p, BM, static_cast<int>(ctaid_x()), p.tail_groups);
                float* slot = kPacked ? lse_slot_packed(p, seq_span<kPacked>(p, ql.batch), ql.head, m0 + r)
                                      : lse_slot(p, ql.batch, ql.head, m0 + r);
                *slot = row_lse(row_max[mt][hf] * exp_scale, l);
            }
#pragma unroll
            for (int dt = 0; dt < DC / 8; ++dt) {
                const uint32_t packed = E::pack(o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
                *reinterpret_cast<uint32_t*>(sQ + swizzle<CPR>(r, warp_col * (DC / 8) + dt) * 8 + 2 * t) = packed;
            }
        }
    __syncwarp();

    // (batch, head) again from a fresh read of the block index: the divisions cost a few
    // instructions once, where keeping b and h (with sign words) across the loop spilled.
    const QueryBlock qo = query_block_tail(p, BM, static_cast<int>(ctaid_x()), p.tail_groups);
    uint16_t* og;
    int rows;
    if constexpr (kPacked) {
        const SeqSpan so = seq_span<kPacked>(p, qo.batch);
        og = o_seq_rows<uint16_t>(p, so, qo.head);
        rows = so.len_q;
    } else {
        og = static_cast<uint16_t*>(p.o) + qo.batch * p.o_batch_stride + qo.head * p.o_head_stride;
        rows = p.seq_q;
    }
    constexpr int kColChunks = CPR / Cfg::kDSplit;  // this warp's chunks of a row
    constexpr int kWarpChunks = Cfg::kWarpRows * kColChunks;
#pragma unroll
    for (int i = 0; i < kWarpChunks / 32; ++i) {
        const int chunk = lane + i * 32;
        const int r = warp_row0 + chunk / kColChunks;
        const int c = warp_col * kColChunks + chunk % kColChunks;
        const int row = m0 + r;
        if (row >= rows || c * 8 >= p.head_dim) continue;
        const uint4 val = *reinterpret_cast<const uint4*>(sQ + swizzle<CPR>(r, c) * 8);
        uint16_t* dst = og + static_cast<int64_t>(row) * p.o_seq_stride + c * 8;
        if (p.vec_out) {
            *reinterpret_cast<uint4*>(dst) = val;
        } else {
            const uint16_t* e = reinterpret_cast<const uint16_t*>(&val);
            for (int k = 0; k < 8 && c * 8 + k < p.head_dim; ++k) dst[k] = e[k];
        }
    }
}

// ---- f32: plain FMA ---------------------------------------------------------------------

namespace f32 {
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 4;
constexpr int kBlockM = kWarps * kRowsPerWarp;
constexpr int kBlockN = 32;  // one key per lane in S = Q Kᵀ
// Columns per lane: head_dim <= 32 · this. The d256 instance keeps K and V tiles side by
// side; the d512 one (fattn_fwd_f32_d512) reads V into K's buffer after S, to fit 99 KiB.
template <int kMaxCols>
struct Shape {
    static constexpr int kMaxColsPerLane = kMaxCols;
    static constexpr bool kReuseKV = kMaxCols > 8;
};
// K rows are padded to an odd stride so a warp reading one column of 32 rows hits 32 banks.
__host__ __device__ constexpr int k_stride(int head_dim) { return head_dim % 2 == 0 ? head_dim + 1 : head_dim; }
__host__ __device__ constexpr int smem_floats(int head_dim, bool reuse_kv) {
    return kBlockM * head_dim + kBlockN * k_stride(head_dim) + (reuse_kv ? 0 : kBlockN * head_dim);
}
// True when bytes[d] is the dynamic shared memory of head dim d for every d >= 1.
template <int N>
constexpr bool smem_bytes_match(const unsigned (&bytes)[N], bool reuse_kv) {
    for (int d = 1; d < N; ++d) {
        if (bytes[d] != static_cast<unsigned>(smem_floats(d, reuse_kv)) * 4) return false;
    }
    return true;
}
}  // namespace f32

template <int kMaxCols, bool kPacked>
__device__ __forceinline__ void fwd_f32(const FattnParams& p) {
    using namespace f32;
    constexpr int kCols = Shape<kMaxCols>::kMaxColsPerLane;
    constexpr bool kReuse = Shape<kMaxCols>::kReuseKV;
    const float kNegInf = -CUDART_INF_F;
    extern __shared__ uint4 smem_u4[];
    const int D = p.head_dim;
    const int KS = k_stride(D);
    float* sQ = reinterpret_cast<float*>(smem_u4);
    float* sK = sQ + kBlockM * D;
    float* sV = kReuse ? sK : sK + kBlockN * KS;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const QueryBlock qb = query_block_tail(p, kBlockM, static_cast<int>(ctaid_x()), p.tail_groups);
    const int b = qb.batch;
    const int h = qb.head;
    const int kvh = h / p.kv_group;
    const int m0 = qb.m0;
    const SeqSpan span = seq_span<kPacked>(p, b);
    if (kPacked && m0 >= span.len_q) return;
    const SeqMask msk = kPacked ? packed_mask(p, b, span.len_q, span.len_k) : dense_mask(p);
    const int m_last = min(m0 + kBlockM, msk.len_q) - 1;

    const float* qg = kPacked ? q_seq_rows<float>(p, span, h) : q_head_rows<float>(p, b, h);
    const int32_t* table = kPacked ? block_table_row(p, b) : nullptr;
    const float* kbase = static_cast<const float*>(p.k) + kvh * p.k_head_stride;
    const float* vbase = static_cast<const float*>(p.v) + kvh * p.v_head_stride;
    const float* kg = k_head_rows<float>(p, b, kvh);
    const float* vg = v_head_rows<float>(p, b, kvh);
    // Key `key` (< len_k) of this sequence in k and v.
    auto k_row = [&](int key) {
        return kPacked ? kv_key_row(p, kbase, p.k_batch_stride, p.k_seq_stride, table, span.k0, key)
                       : kg + static_cast<int64_t>(key) * p.k_seq_stride;
    };
    auto v_row = [&](int key) {
        return kPacked ? kv_key_row(p, vbase, p.v_batch_stride, p.v_seq_stride, table, span.k0, key)
                       : vg + static_cast<int64_t>(key) * p.v_seq_stride;
    };

    for (int i = tid; i < kBlockM * D; i += blockDim.x) {
        const int r = i / D, c = i % D;
        sQ[i] = m0 + r < msk.len_q ? qg[static_cast<int64_t>(m0 + r) * p.q_seq_stride + c] : 0.f;
    }

    const float alibi_log2 = p.alibi_slopes != nullptr ? p.alibi_slopes[b * p.heads + h] * CUDART_L2E_F : 0.f;
    const KeyRange keys = block_key_range(p, msk, m0, m_last);
    float acc[kRowsPerWarp][kCols];
    float row_max[kRowsPerWarp], row_sum[kRowsPerWarp];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        row_max[rr] = kNegInf;
        row_sum[rr] = 0.f;
#pragma unroll
        for (int u = 0; u < kCols; ++u) acc[rr][u] = 0.f;
    }

    for (int n0 = (keys.lo / kBlockN) * kBlockN; n0 < keys.hi; n0 += kBlockN) {
        __syncthreads();  // previous tile fully consumed (and Q stored, first time)
        for (int i = tid; i < kBlockN * D; i += blockDim.x) {
            const int r = i / D, c = i % D;
            const bool ok = n0 + r < msk.len_k;
            sK[r * KS + c] = ok ? k_row(n0 + r)[c] : 0.f;
            if (!kReuse) sV[r * D + c] = ok ? v_row(n0 + r)[c] : 0.f;
        }
        __syncthreads();
        // Scores and the online softmax of this warp's rows; P stays in registers (lane = key).
        float pj[kRowsPerWarp];
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            const int r = warp * kRowsPerWarp + rr;
            const int row = m0 + r;
            const int key = n0 + lane;
            float dot = 0.f;
            for (int c = 0; c < D; ++c) dot = fmaf(sQ[r * D + c], sK[lane * KS + c], dot);
            float x = kPacked ? score_log2_diag(p, dot, alibi_log2, msk.diag(row), key)
                              : score_log2(p, dot, alibi_log2, row, key);
            if (!key_range(p, msk, row).contains(key) || key >= msk.len_k) x = kNegInf;
            float mx = x;
#pragma unroll
            for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            mx = fmaxf(mx, row_max[rr]);
            const float base = max_ref(mx);
            const float corr = exp2_approx(row_max[rr] - base);
            row_max[rr] = mx;
            pj[rr] = exp2_approx(x - base);
            row_sum[rr] = row_sum[rr] * corr + pj[rr];
#pragma unroll
            for (int u = 0; u < kCols; ++u) acc[rr][u] *= corr;
        }
        if constexpr (kReuse) {
            __syncthreads();  // every warp is done with K: V goes into its buffer
            for (int i = tid; i < kBlockN * D; i += blockDim.x) {
                const int r = i / D, c = i % D;
                sV[r * D + c] = n0 + r < msk.len_k ? v_row(n0 + r)[c] : 0.f;
            }
            __syncthreads();
        }
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            for (int j = 0; j < kBlockN; ++j) {
                const float pb = __shfl_sync(0xffffffffu, pj[rr], j);
#pragma unroll
                for (int u = 0; u < kCols; ++u) {
                    const int c = lane + 32 * u;
                    if (c < D) acc[rr][u] = fmaf(pb, sV[j * D + c], acc[rr][u]);
                }
            }
        }
    }

    float* og = kPacked ? o_seq_rows<float>(p, span, h) : o_head_rows<float>(p, b, h);
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        float l = row_sum[rr];
#pragma unroll
        for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
        const float inv = inv_row_sum(l);
        const int row = m0 + warp * kRowsPerWarp + rr;
        if (row >= msk.len_q) continue;
        if (p.lse != nullptr && lane == 0) {
            float* slot = kPacked ? lse_slot_packed(p, span, h, row) : lse_slot(p, b, h, row);
            *slot = row_lse(row_max[rr], l);
        }
#pragma unroll
        for (int u = 0; u < kCols; ++u) {
            const int c = lane + 32 * u;
            if (c < D) og[static_cast<int64_t>(row) * p.o_seq_stride + c] = acc[rr][u] * inv;
        }
    }
}

}  // namespace fattn

// ---- entry points ------------------------------------------------------------------------
//
// The instances are declared once, in src/cuda/instances.rs. build.rs expands
// FATTN_INSTANCE_FWD once per instance of this file (the generated list
// FATTN_INSTANCES_FWD_SM80) into its extern "C" kernel, and checks that the numbers the crate
// launches it with are what the traits compute. VARIANT: 0 plain, 1 softcap/ALiBi (`_mods`),
// 2 both (the softcap/ALiBi code behind a run-time switch: every head dim but d64 since
// session 62, and the f32 kernel).
// SMEM 0: a function of the head dim, checked for every head dim against the generated table
// fattn_gen::NAME_smem_bytes.

#define FATTN_INSTANCE_FWD(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM) \
    FATTN_FWD_ENTRY_##DTYPE(NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)
#define FATTN_FWD_ENTRY_F16(...) FATTN_FWD_ENTRY_TC(F16, __VA_ARGS__)
#define FATTN_FWD_ENTRY_BF16(...) FATTN_FWD_ENTRY_TC(BF16, __VA_ARGS__)

// Each instance has two entry points: NAME, the dense kernel, and NAME_varlen, the packed
// (varlen/paged) one, so that the packed path's registers never change the dense kernel's
// allocation (one entry with both paths spilled at d64-d256 under ptxas 13.0, sm_90).
#define FATTN_FWD_ENTRY_TC(ELEM, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                        \
    static_assert(VARIANT >= 0 && VARIANT <= 2, #NAME ": a tensor-core instance is plain, _mods or both");          \
    static_assert(fattn::FwdTraits<D>::kHeadDim == D, #NAME ": head dim");                                          \
    static_assert(fattn::FwdTraits<D>::kThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs");   \
    static_assert(fattn::FwdTraits<D>::kBlockM == ROWS, #NAME ": block rows differ from src/cuda/instances.rs");    \
    static_assert(fattn::FwdTraits<D>::kBlockN == KEYS, #NAME ": key block differs from src/cuda/instances.rs");    \
    static_assert(fattn::FwdTraits<D>::kSmemBytes == SMEM, #NAME ": smem bytes differ from src/cuda/instances.rs"); \
    extern "C" __global__ void __launch_bounds__(fattn::FwdTraits<D>::kThreads, fattn::FwdTraits<D>::kMinBlocksPerSM) \
        NAME(const __grid_constant__ FattnParams p) {                                                                \
        fattn::fwd_tensor_core<fattn::FwdTraits<D>, fattn::ELEM, VARIANT != 0, false, VARIANT == 2>(p);              \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(fattn::FwdTraits<D>::kThreads, fattn::FwdTraits<D>::kMinBlocksPerSM) \
        NAME##_varlen(const __grid_constant__ FattnParams p) {                                                       \
        fattn::fwd_tensor_core<fattn::FwdTraits<D>, fattn::ELEM, VARIANT != 0, true, VARIANT == 2>(p);               \
    }

#define FATTN_FWD_ENTRY_F32(NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                         \
    static_assert(VARIANT == 2 && SMEM == 0, #NAME ": one kernel for both variants, smem per head dim");        \
    static_assert(D % 32 == 0, #NAME ": head dim a multiple of the warp's columns");                            \
    static_assert(fattn::f32::kWarps * 32 == THREADS, #NAME ": threads differ from src/cuda/instances.rs");      \
    static_assert(fattn::f32::kBlockM == ROWS, #NAME ": block rows differ from src/cuda/instances.rs");          \
    static_assert(fattn::f32::kBlockN == KEYS, #NAME ": key block differs from src/cuda/instances.rs");          \
    static_assert(fattn::f32::smem_bytes_match(fattn_gen::NAME##_smem_bytes, fattn::f32::Shape<D / 32>::kReuseKV), \
                  #NAME ": smem bytes differ from src/cuda/instances.rs (fwd_f32_smem_bytes)");                 \
    extern "C" __global__ void __launch_bounds__(fattn::f32::kWarps * 32)                                        \
        NAME(const __grid_constant__ FattnParams p) {                                                            \
        fattn::fwd_f32<D / 32, false>(p);                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(fattn::f32::kWarps * 32)                                        \
        NAME##_varlen(const __grid_constant__ FattnParams p) {                                                   \
        fattn::fwd_f32<D / 32, true>(p);                                                                         \
    }
