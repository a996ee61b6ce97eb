// Attention backward, FlashAttention-2 style, for sm_80 and newer (compute_80 PTX).
//
// What it computes, per (batch, q head h, query row i, key j), with s_ij the forward's score
// (scale, softcap, ALiBi, bottom-right masks; src/reference.rs) and lse_i the forward's
// natural-log log-sum-exp of row i:
//   D_i  = Σ_c dO_ic·O_ic                                   (preprocess, f32)
//   P_ij = exp(s_ij - lse_i) for visible j, else 0          (recomputed from Q, K and lse)
//   dV_j += Σ_i P_ij dO_i,  dP_ij = <dO_i, V_j>,  dS_ij = P_ij (dP_ij - D_i) [· (1 - t_ij²)]
//   dQ_i += scale · Σ_j dS_ij K_j,  dK_j += scale · Σ_i dS_ij Q_i
// with t_ij = tanh(scale·<q_i,k_j>/softcap) under a softcap (the capped score's derivative),
// ALiBi slopes constant, f32 accumulation everywhere, and dK/dV of a kv head summed over its
// group of q heads (GQA/MQA). A row with no visible key (lse = -inf) gets zero gradients and
// never evaluates exp(s - lse).
//
// Kernels (launched in this order by src/cuda/backward.rs, all on candle's stream, after a
// memset that zeroes the f32 dQ accumulator; each declared once in src/cuda/instances.rs,
// whose generated entry points (FATTN_INSTANCE_BWD* at the end of this file) assert the
// launch numbers against the traits here):
// * `fattn_bwd_preprocess_{f16,bf16,f32}`: one warp per (batch, head, row) of the padded
//   query length: D_i, and lse_i·log2 e (with -inf → +inf, so exp2(x - lse) is exactly 0 for
//   empty rows without a test), both 0/+inf on padding rows.
// * `fattn_bwd_{f16,bf16}_d{D}` (tensor cores, mma.sync m16n8k16, f32 accumulators):
//   one CTA per (key block of kBlockN keys, d-split, kv split, kv head, batch). Each warp owns
//   16 keys and holds their dK and dV (kDOut columns) in registers for the whole CTA. The CTA
//   walks the (q head of its group) × (query block of kBlockM rows) items that see its key
//   block (nothing else is visited; mask arithmetic only on tiles some row sees partially),
//   and per item computes, in the transposed orientation so that no P tile goes through
//   shared memory:
//     dPᵀ = V dOᵀ, Sᵀ = K Qᵀ (A from the warp's K/V rows, B from dO/Q with ldmatrix),
//     Pᵀ = exp2(Sᵀ·scale·log2 e - lse·log2 e), dSᵀ = Pᵀ∘(dPᵀ - D)  (registers, log2 units),
//     dV += Pᵀ dO, dK += dSᵀ Q  (the accumulators' C layout is the next mma's A layout),
//     dSᵀ → shared memory, dQ_item = dS K (warps split the kBlockM × kDOut tile), added with
//     f32 atomics (red.global.add) into the (batch, head, padded row, d) accumulator.
//   K/V/Q/dO tiles are XOR-swizzled (conflict-free ldmatrix), loaded with 16-byte cp.async
//   where rows are 16-byte aligned and with zero-filled element loads otherwise (padding rows
//   and columns are zero, so head dims below an instance's run on it unchanged).
//   One instance per dtype and head dim (`Both`, since session 62) serves plain and
//   softcap/ALiBi problems: the element pass is instantiated once per arithmetic and picked
//   by one uniform branch per item on `mods_on` (the host's selection condition), so plain
//   problems issue none of the softcap/ALiBi instructions. Measured (H200, sm_80 kernels
//   forced, 2 rounds A B / B A, lab/results/s62-call1): d64, d128 and the 9-head d64 rows,
//   causal and not, within ±0.13% of the plain/`_mods` pairs (session 61's per-element
//   `if (mods_on)`, predicated by ptxas, cost d64 29%).
//   With kv_splits > 1 (small grids under GQA), a CTA covers a subset of its group and adds
//   dK/dV into f32 accumulators with atomics; otherwise it stores them directly.
// * `fattn_bwd_f32`: the same algorithm on CUDA cores in plain f32 FMA (no TF32), 16×16
//   tiles, P/dS through shared memory. Correct, not fast.
// * `fattn_bwd_convert_{f16,bf16,f32}`: f32 accumulator × scale → the input dtype,
//   (batch, seq, heads, head_dim) contiguous (dQ always; dK/dV when split).
//
// Tiles (BwdTraits below; every instance fits the 99 KiB that sm_86/sm_89 allow a block):
//   d32:  8 warps, 128 keys × 64 queries, Q/dO double-buffered, K/V fragments in registers
//   d64:  8 warps, 128 × 64, double-buffered, K/V fragments in registers
//   d96:  8 warps, 128 × 64, single-buffered (dO first, then Q, each load under other work)
//   d128: 8 warps, 128 × 64, single-buffered, dS written into the dead Q tile (96.5 KiB);
//         where a block may opt into 145 KiB (sm_80, sm_90), the large-smem tile
//         BwdTraitsLarge<128> (entry points `_l`): Q/dO double-buffered, dS in its own tile,
//         2 barriers per item instead of 5 (the d64 loop)
//   d256: 4 warps, 64 × 32, single-buffered, dS in the Q tile; dK/dV/dQ columns split in two
//         CTAs of 128 columns each (S and dP recomputed by both: 7/5 of the minimum work,
//         which keeps dK+dV at 128 registers)
//   d384: 2 warps, 32 × 32, single-buffered, dS in the Q tile, 3 column splits of 128, dQ in
//         32-column passes; d512: 1 warp, 16 × 32, otherwise the same with 4 splits. The
//         whole-head-dim K, V, Q and dO tiles leave no room for more rows in 99 KiB: correct,
//         not fast (most of an SM idle; streaming the head dim would be the next step).
//   f32: 16 × 16 tiles up to d256, 8 × 8 above (fattn_bwd_f32_d512).
//
// Packed (varlen) batches (cu_seqlens_q/k set; k/v unpaged): a CTA's batch index is a
// sequence; SeqView gives its lengths and first rows, masks align bottom-right per sequence,
// multimodal ranges (mm_ranges) widen the rows that see a key (rows_seeing_key_mm), the LSE
// is (heads, total_q), and the f32 workspaces hold each head's sequences one after another
// with 128+ padding rows between them (packed_ws_base).
//
// Measured (H100 80GB HBM3, 2026-11-23; lab/README.md "Backward kernels", v1): correct on the
// first GPU run (200 random cases per dtype against the f64 autograd oracle, memcheck and
// racecheck clean). Speed, `attention_backward` alone in criterion against PyTorch 2.11 SDPA's
// backward in the same run, bf16: 0.64–0.79× FA2, 0.36–0.50× cuDNN, e.g. (16,16,2048,128)
// 7445 µs against FA2's 5118; the main kernel is the gap (1.98 ms of the 2.25 ms call at
// (16,16,2048,64) causal, where FA2's whole backward takes 1.78 ms). Before the GPU, the
// layouts, masks and pipeline were checked by lab/bwd/bwd_selfcheck.cu (a host replay).
// ptxas 13.0 on this file's compute_80 PTX (bf16; f16 identical), registers / spill bytes
// stored+loaded, per thread:
//   instance      sm_90          sm_80       _mods sm_90    _mods sm_80
//   d32           231 / 0        225 / 0     239 / 0        229 / 0
//   d64           241 / 0        243 / 0     255 / 0        255 / 0
//   d96           248 / 0        244 / 0     251 / 0        255 / 0
//   d128          255 / 56       255 / 8     255 / 40       255 / 48
//   d256          255 / 24       255 / 16    255 / 28       255 / 16
//   f32 114, preprocess 34-40, convert 32-38, none spilling.
// The spills are a few loop-invariant words reloaded per item (SASS: LDL outside the mma
// loops), not accumulators. 8-warp instances therefore run one CTA per SM; d32 capped at 128
// registers (two CTAs) spills 60-270 bytes.
// After packed support and d384/d512 (SeqView's per-sequence lengths and rows live in
// registers where the dense kernel read param space), ptxas 13.0 sm_90, bf16, registers /
// spill bytes stored+loaded: d32 246/0 (_mods 250/0), d64 254/0 (255/44+36), d96 255/20+12
// (255/104+120), d128 255/64+72 (255/68+92), d256 255/8+4 (255/24+24), d384 255/0 (255/0),
// d512 255/20+16 (255/24+20); f32 148 (d512 144); preprocess 40, convert 30.
// Dense/packed split and the d128 large-smem tile (H100, 2026-11-23, lab/README.md "Backward:
// dense/packed entry points and a large-smem d128 tile"): every main-kernel instance has a
// dense entry NAME and a packed NAME_varlen, so the dense kernels read the lengths from param
// space again. ptxas 13.0 sm_90, bf16 dense, registers / spill bytes stored+loaded: d32 230/0,
// d64 240/0 (_mods 248/0), d96 249/0 (_mods 255/12+12), d128 255/24+24 (_mods 16+16), d128_l
// 255/36+36 (_mods 16+16), d256 255/32+44 (_mods 0), d384 255/20+20, d512 255/16+20; packed
// entries 247-255 with 0-56+108 (lab/results/bwd-ptxas-split-large-2026-11-23.txt). Same-run
// A/B against main's binary, `attention_backward` alone (criterion medians of 2 runs each,
// bf16): the split alone 0.988-0.993× the time at d128 and 0.997-1.004× at d64; with the
// d128 large tile 0.931-0.943× at d128 (e.g. (16,16,2048,128) 7409 → 6952 µs, (1,32,16384,128)
// 54614 → 50913). Against PyTorch 2.11 SDPA's backward in the same run: d128 0.71-0.77× FA2,
// 0.40-0.44× cuDNN; d64 0.75-0.81× FA2, 0.46-0.50× cuDNN (lab/results/
// bwd-ab-split-large-h100-2026-11-23.md): the bar (1.0× FA2) is not met. The gradient suites,
// memcheck and racecheck pass (the large tile on the H100), and the bf16/f16 gradient sweeps
// with FUSED_ATTN_BWD_LARGE_TILES=0 (the 99 KiB tiles) too. What is left: the per-item
// efficiency of the 8-warp, 16-keys-per-warp layout (ncu: one CTA per SM, issue slots 25%
// busy, stalls on short/long scoreboard and waits), not the pipeline depth.
// Correctness of the version before (H100, 2026-11-23, lab/README.md "Backward: head dims to 512
// and packed batches"): gradient sweeps 200 cases per dtype, 72 cases at d 257..512, 60
// packed cases against per-sequence dense, no failure of the kernels (one bf16 sweep case at
// d = 1 fails the derived floor on the CPU backward too, see there). Its speed against the
// version above is not measured yet.

#include <type_traits>

#include "common/bwd_index.cuh"
#include "common/kv_addr.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"

// The parameters: FattnBwdParams (which embeds the forward's FattnParams, so that the mask
// helpers of common/mask.cuh apply; its `o` is the forward's output, read by the preprocess)
// and FattnBwdConvertParams, in common/params.cuh.

namespace fattn {
namespace bwd {

constexpr float kLog2e = 1.4426950408889634f;

// ---- tile traits --------------------------------------------------------------------------

template <int kHeadDim_, int kDOut_, int kWarps_, int kMTiles_, int kBlockM_, int kStages_, bool kDSInQ_,
          int kDQWarpsM_, bool kKVInRegs_, int kMinBlocksPerSM_, int kDQChunk_ = 0, int kSmemLimit_ = 99 * 1024>
struct BwdTileConfig {
    static constexpr int kHeadDim = kHeadDim_;
    // Columns of dK/dV/dQ one CTA produces; kHeadDim / kDOut CTAs split the columns.
    static constexpr int kDOut = kDOut_;
    static constexpr int kWarps = kWarps_;
    // m16 key tiles per warp.
    static constexpr int kMTiles = kMTiles_;
    // Query rows per item.
    static constexpr int kBlockM = kBlockM_;
    // 2: the next item's Q/dO load during the whole current item; 1: dO and Q each load
    // during part of the previous item (see the loop).
    static constexpr int kStages = kStages_;
    // dS (kBlockN × kBlockM) is written into the (dead) Q tile instead of its own tile.
    static constexpr bool kDSInQ = kDSInQ_;
    // Warps along the query rows of the dQ tile (the rest split its columns).
    static constexpr int kDQWarpsM = kDQWarpsM_;
    // K and V A-fragments of the warp's keys kept in registers across the loop.
    static constexpr bool kKVInRegs = kKVInRegs_;
    static constexpr int kMinBlocksPerSM = kMinBlocksPerSM_;

    static constexpr int kThreads = kWarps * 32;
    static constexpr int kWarpKeys = 16 * kMTiles;
    static constexpr int kBlockN = kWarpKeys * kWarps;
    static constexpr int kDSplits = kHeadDim / kDOut;
    static constexpr int kCPR = kHeadDim / 8;   // 16-byte chunks per K/V/Q/dO row
    static constexpr int kCPRM = kBlockM / 8;   // 16-byte chunks per dS row (queries)
    static constexpr int kDQWarpsN = kWarps / kDQWarpsM;
    static constexpr int kDQRows = kBlockM / kDQWarpsM;
    static constexpr int kDQCols = kDOut / kDQWarpsN;
    // Columns of the warp's dQ part accumulated per pass (0: all kDQCols at once): wide dQ
    // parts (d384, d512) go in passes so that their accumulators fit beside dK and dV.
    static constexpr int kDQChunk = kDQChunk_ == 0 ? kDQCols : kDQChunk_;
    static constexpr int kTileQ = kBlockM * kHeadDim;   // elements (Q or dO, one stage)
    static constexpr int kTileKV = kBlockN * kHeadDim;  // elements (K or V)
    static constexpr int kTileDS = kDSInQ ? 0 : kBlockN * kBlockM;
    static constexpr int kSmemBytes = (2 * kTileKV + 2 * kStages * kTileQ + kTileDS) * 2 + 2 * kStages * kBlockM * 4;

    static_assert(kHeadDim % 16 == 0 && kDOut % 16 == 0, "head dims must be multiples of the mma k (16)");
    static_assert(kHeadDim % kDOut == 0, "the column split must divide the head dim");
    static_assert(kDSplits == 1 || (kDOut / 8) % 8 == 0, "a column split must keep the swizzle phase (64 columns)");
    static_assert(kCPR % 4 == 0 && kCPRM % 4 == 0, "the swizzle needs rows of a multiple of 4 chunks");
    static_assert(kBlockM % 32 == 0, "query block must be a multiple of 32 (dS rows of 4 chunks)");
    static_assert(kStages == 1 || kStages == 2, "one or two stages");
    static_assert(!kDSInQ || (kStages == 1 && kBlockN <= kHeadDim), "dS fits in the Q tile only single-staged with kBlockN <= D");
    static_assert(kWarps % kDQWarpsM == 0 && kDQRows % 16 == 0 && kDQCols % 16 == 0, "dQ warp tiles must be 16×16 multiples");
    static_assert(kDQChunk % 16 == 0 && kDQCols % kDQChunk == 0, "dQ passes must be 16-column multiples dividing the warp's part");
    static_assert(kBlockN % 16 == 0 && kBlockN <= 128, "key blocks of whole m16 tiles, at most the 128-key workspace padding");
    static_assert(kThreads >= kBlockM / 2, "lse/D loads need kBlockM / 2 threads");
    // One build runs on every sm_80+ GPU: sm_86/sm_89 give a block at most 99 KiB. The
    // large-smem tiles (BwdTraitsLarge) run only where the device allows them (the host
    // checks the opt-in limit and falls back to BwdTraits).
    static_assert(kSmemBytes <= kSmemLimit_, "tile does not fit in its shared-memory limit");
};

// Per head-dim instance. src/cuda/instances.rs declares each instance's threads, query rows
// (kBlockM), keys (kBlockN), column splits and shared memory; its generated entry points
// assert them against these traits (FATTN_INSTANCE_BWD below). Arguments:
// <head dim, dK/dV/dQ columns per CTA, warps, key m-tiles per warp, query block, stages,
//  dS in the Q tile, dQ warps along rows, K/V fragments in registers, min blocks per SM>.
// Registers per thread ≈ dK + dV (kMTiles · kDOut) + Sᵀ + dPᵀ (kMTiles · kBlockM / 2 · 2)
// (+ kMTiles · kHeadDim / 2 with K/V in registers). Check with ptxas -arch=sm_90 -v.
template <int kHeadDim>
struct BwdTraits;
template <>
struct BwdTraits<32> : BwdTileConfig<32, 32, 8, 1, 64, 2, false, 4, true, 1> {};
template <>
struct BwdTraits<64> : BwdTileConfig<64, 64, 8, 1, 64, 2, false, 2, true, 1> {};
template <>
struct BwdTraits<96> : BwdTileConfig<96, 96, 8, 1, 64, 1, false, 4, false, 1> {};
template <>
struct BwdTraits<128> : BwdTileConfig<128, 128, 8, 1, 64, 1, true, 2, false, 1> {};
template <>
struct BwdTraits<256> : BwdTileConfig<256, 128, 4, 1, 32, 1, true, 1, false, 1> {};
// d384 and d512: K, V, Q and dO of the whole head dim must fit the 99 KiB beside each other,
// (2·keys + 2·rows)·D·2 bytes: 32 + 32 rows at d384 (2 warps), 16 + 32 at d512 (one warp).
// dK/dV in 128-column splits (3 and 4 CTAs per key block, S and dP recomputed by each), dQ in
// 32-column passes. Correct first; these tiles leave most of an SM idle (lab/README.md).
template <>
struct BwdTraits<384> : BwdTileConfig<384, 128, 2, 1, 32, 1, true, 2, false, 1, 32> {};
template <>
struct BwdTraits<512> : BwdTileConfig<512, 128, 1, 1, 32, 1, true, 1, false, 1, 32> {};

// Large-smem tiles, for GPUs whose blocks may opt into more than 99 KiB (sm_80: 163 KiB,
// sm_90: 227 KiB); src/cuda/backward.rs launches the `_l` entry points only where the
// device's opt-in limit holds kSmemBytes, and BwdTraits elsewhere. kSmemBytes 0: none.
// d128 (145 KiB): the 99 KiB tile is single-buffered with dS written into the dead Q tile,
// 5 barriers per item and each load hidden behind a fifth of one; here Q/dO are
// double-buffered (the next item's load runs under the whole current item) and dS has its
// own tile: 2 barriers per item, the same loop as d64.
template <int kHeadDim>
struct BwdTraitsLarge {
    static constexpr int kSmemBytes = 0;
};
template <>
struct BwdTraitsLarge<128> : BwdTileConfig<128, 128, 8, 1, 64, 2, false, 2, false, 1, 0, 227 * 1024> {};

// Physical chunk of (row, chunk) in a swizzled tile of CPR chunks per row (as the forward's):
// the 8 rows an ldmatrix phase reads land in 8 distinct 16-byte bank groups.
template <int CPR>
__host__ __device__ __forceinline__ int swizzle(int row, int chunk) {
    if constexpr (CPR % 8 == 0) {
        return row * CPR + (chunk ^ (row & 7));
    } else {
        return row * CPR + (chunk ^ ((row >> 1) & 3));
    }
}

// Address of the lane's row of the ldmatrix.x4 block at (r0 + lr, c0 + lc) of a swizzled tile,
// from `base` = tile + swizzle(lr, lc)·16 (one register per tile and lane pattern). r0 a
// multiple of 8, c0 even, both compile-time: the swizzle only XORs the low 3 (2) chunk bits
// with row bits that r0 does not change, so c0's low bits are XORed in and the rest added.
// Needs `tile` aligned to 128 (64) bytes, and any extra offset folded into `base` a multiple
// of 8 rows and of 8 (4) chunks.
template <int CPR>
__host__ __device__ __forceinline__ uint32_t frag_addr(uint32_t base, int r0, int c0) {
    constexpr int kLow = CPR % 8 == 0 ? 7 : 3;
    return (base ^ static_cast<uint32_t>((c0 & kLow) * 16)) + static_cast<uint32_t>(((c0 & ~kLow) + r0 * CPR) * 16);
}

// The two lane patterns of ldmatrix.x4 over a 16×16 block (r = row in block, c = chunk 0/1):
// pattern 1: matrices (rows 0-7, c0), (rows 8-15, c0), (rows 0-7, c1), (rows 8-15, c1): the A
//   operand from a row-major m×k tile, or (with .trans) the B operand from a k×n tile;
// pattern 2: matrices (rows 0-7, c0), (rows 0-7, c1), (rows 8-15, c0), (rows 8-15, c1): the B
//   operands of two n8 tiles from an n×k tile, or (with .trans) the A operand from a k×m tile.
__host__ __device__ __forceinline__ int pat1_row(int lane) { return lane % 16; }
__host__ __device__ __forceinline__ int pat1_chunk(int lane) { return lane / 16; }
__host__ __device__ __forceinline__ int pat2_row(int lane) { return lane % 8 + (lane / 16) * 8; }
__host__ __device__ __forceinline__ int pat2_chunk(int lane) { return (lane / 8) % 2; }

// ---- device helpers ---------------------------------------------------------------------

// Element-wise fallback of `load_tile` (unaligned rows or head dims that are not a multiple of
// 8): synchronous loads, zero padding. Out of line so its address arithmetic costs the fast
// path no registers.
template <int kThreads, int CPR, int kRows>
__device__ __noinline__ void load_tile_elementwise(uint16_t* tile, const uint16_t* g, int64_t row_stride, int row0,
                                                   int row_end, int head_dim, int tid) {
    for (int chunk = tid; chunk < kRows * CPR; chunk += kThreads) {
        const int r = chunk / CPR;
        const int c = chunk % CPR;
        const int row = row0 + r;
        const uint16_t* src = g + static_cast<int64_t>(row) * row_stride + c * 8;
        union {
            uint4 v;
            uint16_t e[8];
        } buf;
#pragma unroll
        for (int e = 0; e < 8; ++e) buf.e[e] = (row < row_end && c * 8 + e < head_dim) ? src[e] : uint16_t(0);
        *reinterpret_cast<uint4*>(tile + swizzle<CPR>(r, c) * 8) = buf.v;
    }
}

// Copies rows [row0, row0 + kRows) of a (seq, head_dim) matrix with row stride `row_stride`
// into a swizzled tile; rows >= row_end and columns >= head_dim are zero (never read).
// `vec`: 16-byte cp.async (rows 16-byte aligned, head_dim % 8 == 0); otherwise element loads.
template <int kThreads, int CPR, int kRows>
__device__ __forceinline__ void load_tile(uint16_t* tile, const uint16_t* g, int64_t row_stride, int row0,
                                          int row_end, int head_dim, bool vec, int tid) {
    if (!vec) {
        load_tile_elementwise<kThreads, CPR, kRows>(tile, g, row_stride, row0, row_end, head_dim, tid);
        return;
    }
    if constexpr (kThreads % CPR == 0) {
        // Each thread keeps one column chunk and walks rows kStep apart.
        constexpr int kStep = kThreads / CPR;
        const int c = tid % CPR;
        const int r0 = tid / CPR;
        const bool col_ok = c * 8 < head_dim;
        const uint16_t* src = g + static_cast<int64_t>(row0 + r0) * row_stride + c * 8;
        const int64_t step = static_cast<int64_t>(kStep) * row_stride;
#pragma unroll
        for (int i = 0; i < (kRows + kStep - 1) / kStep; ++i) {
            const int r = r0 + i * kStep;
            if (kRows % kStep != 0 && r >= kRows) break;
            const bool ok = col_ok && row0 + r < row_end;
            cp_async_16(tile + swizzle<CPR>(r, c) * 8, ok ? src + i * step : g, ok);
        }
    } else {
#pragma unroll 1
        for (int chunk = tid; chunk < kRows * CPR; chunk += kThreads) {
            const int r = chunk / CPR;
            const int c = chunk % CPR;
            const int row = row0 + r;
            const bool ok = row < row_end && c * 8 < head_dim;
            cp_async_16(tile + swizzle<CPR>(r, c) * 8, ok ? g + static_cast<int64_t>(row) * row_stride + c * 8 : g,
                        ok);
        }
    }
}

// ---- tensor-core kernel -------------------------------------------------------------------

// kMods: the instance has the softcap/ALiBi code; kSwitch: it serves plain problems too, the
// code behind a run-time switch (a `Both` instance, src/cuda/instances.rs).
template <class Cfg, class E, bool kMods, bool kPacked, bool kSwitch>
__device__ __forceinline__ void bwd_tensor_core(const FattnBwdParams& bp) {
    const FattnParams& p = bp.fwd;
    // A `Both` instance runs plain problems too (one kernel per head dim and dtype, half the
    // compile time): they take the plain arithmetic, on the condition src/cuda/backward.rs
    // used to pick `_mods` by, so a gradient's bits do not depend on the instance.
    const bool mods_on = kMods && (!kSwitch || p.softcap > 0.f || p.alibi_slopes != nullptr);
    constexpr int D = Cfg::kHeadDim;
    constexpr int DO = Cfg::kDOut;
    constexpr int BM = Cfg::kBlockM;
    constexpr int BN = Cfg::kBlockN;
    constexpr int MT = Cfg::kMTiles;
    constexpr int ST = Cfg::kStages;
    constexpr int CPR = Cfg::kCPR;
    constexpr int CPRM = Cfg::kCPRM;
    constexpr int QR = Cfg::kDQRows;
    constexpr int QC = Cfg::kDQCols;
    constexpr int QCH = Cfg::kDQChunk;
    constexpr int kDQPasses = QC / QCH;
    constexpr uint32_t kTileQBytes = Cfg::kTileQ * 2;
    extern __shared__ __align__(1024) uint4 smem_u4[];
    uint16_t* sK = reinterpret_cast<uint16_t*>(smem_u4);
    uint16_t* sV = sK + Cfg::kTileKV;
    uint16_t* sQ = sV + Cfg::kTileKV;
    uint16_t* sdO = sQ + ST * Cfg::kTileQ;
    uint16_t* sdS = Cfg::kDSInQ ? sQ : sdO + ST * Cfg::kTileQ;
    float* sLse = reinterpret_cast<float*>(sdO + ST * Cfg::kTileQ + Cfg::kTileDS);
    float* sDsum = sLse + ST * BM;

    // frag_addr needs 128-byte aligned tiles. The file has no static shared variables, so the
    // dynamic buffer starts at 0; if a change ever moves it (lab/README.md tells how
    // a static __shared__ did that to the decode kernel), fail loudly rather than compute garbage.
    if ((smem_addr(smem_u4) & 127u) != 0) __trap();

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int g = lane / 4;  // mma fragment row within 8
    const int t = lane % 4;  // mma fragment column pair

    BwdCta cta = bwd_cta(static_cast<int>(blockIdx.x), p.seq_q, p.seq_k, p.kv_heads, p.kv_group, p.window_left,
                         p.window_right, bp.kv_splits, bp.heads_per_split, BN, BM, Cfg::kDSplits, DO,
                         static_cast<int>(gridDim.x), kPacked ? 0 : p.tail_groups);
    const SeqView sv = seq_view<kPacked>(bp, cta.b);
    cta_rows(cta, sv, p.window_left, p.window_right, p.max_mm_ranges, bp.heads_per_split, BN, BM);
    const int b = cta.b;
    const int n0 = cta.n0;
    const int d_off = cta.d_off;
    const int nm = cta.nm;
    const int items = cta.items;
    const int kw0 = warp * Cfg::kWarpKeys;  // the warp's first key within the block

    float dk[MT][DO / 8][4];
    float dv[MT][DO / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int dt = 0; dt < DO / 8; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                dk[mt][dt][e] = 0.f;
                dv[mt][dt][e] = 0.f;
            }

    if (items > 0) {
        const bool vec_in = p.vec_in != 0;
        const bool vec_do = bp.vec_do != 0;
        const uint16_t* kg = k_head_rows<uint16_t>(p, b, cta.kvh) + static_cast<int64_t>(sv.k_row0) * p.k_seq_stride;
        const uint16_t* vg = v_head_rows<uint16_t>(p, b, cta.kvh) + static_cast<int64_t>(sv.k_row0) * p.v_seq_stride;

        // Items walk the query blocks of one q head, then the next head: (h, m0) and the
        // next item's (h_next, m0_next) are stepped, not divided out of the item index.
        auto load_do = [&](int h, int m0, int stage) {
            const uint16_t* dog = static_cast<const uint16_t*>(bp.d_o) + b * bp.do_batch_stride +
                                  static_cast<int64_t>(sv.q_row0) * bp.do_seq_stride + h * bp.do_head_stride;
            load_tile<Cfg::kThreads, CPR, BM>(sdO + stage * Cfg::kTileQ, dog, bp.do_seq_stride, m0, sv.sq,
                                              p.head_dim, vec_do, tid);
        };
        // Q with the rows' lse·log2 e and D (both padded to seq_q_pad: whole 16-byte chunks).
        auto load_q = [&](int h, int m0, int stage) {
            const uint16_t* qg = q_head_rows<uint16_t>(p, b, h) + static_cast<int64_t>(sv.q_row0) * p.q_seq_stride;
            load_tile<Cfg::kThreads, CPR, BM>(sQ + stage * Cfg::kTileQ, qg, p.q_seq_stride, m0, sv.sq, p.head_dim,
                                              vec_in, tid);
            const int64_t row = static_cast<int64_t>(sv.ws_q0) + static_cast<int64_t>(h) * bp.ws_rows_q + m0;
            if (tid < BM / 4) {
                cp_async_16(sLse + stage * BM + tid * 4, bp.lse_log2 + row + tid * 4, true);
            } else if (tid < BM / 2) {
                const int c = tid - BM / 4;
                cp_async_16(sDsum + stage * BM + c * 4, bp.dsum + row + c * 4, true);
            }
        };

        // Groups: K/V, then dO of item 0, then Q of item 0.
        load_tile<Cfg::kThreads, CPR, BN>(sK, kg, p.k_seq_stride, n0, sv.sk, p.head_dim, vec_in, tid);
        load_tile<Cfg::kThreads, CPR, BN>(sV, vg, p.v_seq_stride, n0, sv.sk, p.head_dim, vec_in, tid);
        cp_async_commit();
        const int m_first = cta.mb_begin * BM;
        const int m_end = (cta.mb_begin + nm) * BM;
        load_do(cta.h_first, m_first, 0);
        cp_async_commit();
        load_q(cta.h_first, m_first, 0);
        cp_async_commit();

        // Lane base addresses (see frag_addr). A operands from the warp's K/V rows, B operands
        // of Sᵀ/dPᵀ from Q/dO rows, B operands of dK/dV from Q/dO (transposed, this CTA's
        // columns), and the dQ operands: dS (transposed) and K (transposed) at the warp's
        // part of the dQ tile.
        const int lr1 = pat1_row(lane), lc1 = pat1_chunk(lane);
        const int lr2 = pat2_row(lane), lc2 = pat2_chunk(lane);
        const uint32_t a_off = (kw0 * CPR + swizzle<CPR>(lr1, lc1)) * 16;
        const uint32_t sK_a = smem_addr(sK) + a_off;
        const uint32_t sV_a = smem_addr(sV) + a_off;
        const uint32_t b_off = swizzle<CPR>(lr2, lc2) * 16;
        const uint32_t sQ_b = smem_addr(sQ) + b_off;
        const uint32_t sdO_b = smem_addr(sdO) + b_off;
        const uint32_t t_off = (swizzle<CPR>(lr1, lc1) + d_off / 8) * 16;
        const uint32_t sQ_t = smem_addr(sQ) + t_off;
        const uint32_t sdO_t = smem_addr(sdO) + t_off;
        const int q0w = (warp / Cfg::kDQWarpsN) * QR;  // the warp's dQ rows and columns
        const int c0w = (warp % Cfg::kDQWarpsN) * QC;
        uint32_t sdS_a[QR / 16];
#pragma unroll
        for (int mq = 0; mq < QR / 16; ++mq)
            sdS_a[mq] = smem_addr(sdS) + swizzle<CPRM>(lr2, q0w / 8 + mq * 2 + lc2) * 16;
        // K (transposed) at the warp's dQ columns of pass `pass` (kDQChunk columns each).
        auto sK_t_addr = [&](int dn, int pass) -> uint32_t {
            return smem_addr(sK) + swizzle<CPR>(lr1, (d_off + c0w + pass * QCH) / 8 + dn * 2 + lc1) * 16;
        };
        uint32_t sK_t[QCH / 16];
#pragma unroll
        for (int dn = 0; dn < QCH / 16; ++dn) sK_t[dn] = sK_t_addr(dn, 0);

        constexpr int kKVRegSteps = Cfg::kKVInRegs ? D / 16 : 1;
        uint32_t kfr[MT][kKVRegSteps][4];
        uint32_t vfr[MT][kKVRegSteps][4];
        if constexpr (Cfg::kKVInRegs) {
            cp_async_wait<2>();  // K/V landed (dO and Q may still be in flight)
            __syncthreads();
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    ldmatrix_x4(kfr[mt][kk], frag_addr<CPR>(sK_a, mt * 16, kk * 2));
                    ldmatrix_x4(vfr[mt][kk], frag_addr<CPR>(sV_a, mt * 16, kk * 2));
                }
        }

        using STile = float[MT][BM / 8][4];
        // acc[mt][n8 tile] += (the warp's 16·MT rows of tile `a`) · (rows of tile `bt` at `b_base`)ᵀ
        // over the full head dim: Sᵀ = K Qᵀ and dPᵀ = V dOᵀ.
        auto gemm_rows_t = [&](STile& acc, uint32_t a_base, const uint32_t (&afr)[MT][kKVRegSteps][4],
                               uint32_t b_base) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < BM / 8; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if constexpr (Cfg::kKVInRegs) {
#pragma unroll
                        for (int r = 0; r < 4; ++r) a[mt][r] = afr[mt][kk][r];
                    } else {
                        ldmatrix_x4(a[mt], frag_addr<CPR>(a_base, mt * 16, kk * 2));
                    }
                }
#pragma unroll
                for (int nq = 0; nq < BM / 16; ++nq) {
                    uint32_t bf[4];
                    ldmatrix_x4(bf, frag_addr<CPR>(b_base, nq * 16, kk * 2));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        E::mma(acc[mt][2 * nq], a[mt], bf[0], bf[1]);
                        E::mma(acc[mt][2 * nq + 1], a[mt], bf[2], bf[3]);
                    }
                }
            }
        };

        int h = cta.h_first;
        int m0 = m_first;
        for (int it = 0; it < items; ++it) {
            const int st = ST == 2 ? (it & 1) : 0;
            const bool has_next = it + 1 < items;
            const bool next_head = m0 + BM == m_end;
            const int h_next = next_head ? h + 1 : h;
            const int m0_next = next_head ? m_first : m0 + BM;
            // The head's ALiBi slope, loaded here so its latency hides behind the first GEMM.
            float alibi_log2 = 0.f;
            if (mods_on && p.alibi_slopes != nullptr) alibi_log2 = p.alibi_slopes[b * p.heads + h] * kLog2e;
            if constexpr (ST == 2) {
                // Everything of this item landed, and every warp is done with the previous
                // item, whose stage (and the dS tile) the next loads and writes reuse.
                cp_async_wait<0>();
                __syncthreads();
                if (has_next) {
                    load_do(h_next, m0_next, st ^ 1);
                    load_q(h_next, m0_next, st ^ 1);
                }
                cp_async_commit();
            } else {
                cp_async_wait<1>();  // dO of this item (Q may be in flight)
                __syncthreads();
            }

            // dPᵀ = V dOᵀ.
            STile dpt;
            gemm_rows_t(dpt, sV_a, vfr, sdO_b + st * kTileQBytes);
            if constexpr (ST == 1) {
                cp_async_wait<0>();  // Q, lse, D of this item
                __syncthreads();
            }
            // Sᵀ = K Qᵀ.
            STile sT;
            gemm_rows_t(sT, sK_a, kfr, sQ_b + st * kTileQBytes);

            // Pᵀ and dSᵀ in place, element (mt, nt, e): key kw0 + mt·16 + g + 8·(e/2), query
            // column nt·8 + 2t + e%2 of the item. Computed for every element first; on tiles
            // that some row sees partially (or with padding rows/keys), a second pass then
            // zeroes the masked ones exactly (whatever exp2 gave there).
            // The pass is instantiated once per arithmetic and chosen by one uniform branch per
            // tile: a per-element `if (mods_on)` was if-converted by ptxas into predicated code
            // that plain problems issued too (d64: 4 144 SASS instructions against 2 968, 132
            // MUFU against 36, +29% time; lab/README.md, session 61).
            const float* lse_s = sLse + st * BM;
            const float* dsum_s = sDsum + st * BM;
            auto element_pass = [&](auto mods_tag) {
                constexpr bool kM = decltype(mods_tag)::value;
#pragma unroll
                for (int nt = 0; nt < BM / 8; ++nt) {
                    const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
                    const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const float lse = e % 2 == 0 ? l2.x : l2.y;
                            const float dsum = e % 2 == 0 ? d2.x : d2.y;
                            const float dot = sT[mt][nt][e];
                            float pr, ds;
                            if constexpr (kM) {
                                // row + sk - sq - key
                                const int rel = m0 + nt * 8 + 2 * t + e % 2 + (sv.sk - sv.sq) -
                                                (n0 + kw0 + mt * 16 + g + 8 * (e / 2));
                                float th;
                                const float x = mod_score_log2(p, dot, alibi_log2, rel, th);
                                pr = exp2_approx(x - lse);
                                ds = pr * (dpt[mt][nt][e] - dsum) * (1.f - th * th);
                            } else {
                                pr = exp2_approx(fmaf(dot, p.scale_log2, -lse));
                                ds = pr * (dpt[mt][nt][e] - dsum);
                            }
                            sT[mt][nt][e] = pr;
                            dpt[mt][nt][e] = ds;
                        }
                }
            };
            if (mods_on)
                element_pass(std::true_type{});
            else
                element_pass(std::false_type{});
            {
                const bool full =
                    block_fully_visible_seq(sv, p.window_left, p.window_right, m0, m0 + BM - 1, n0, n0 + BN);
                if (!full) {
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                        for (int hf = 0; hf < 2; ++hf) {
                            // The key's visible query columns [qlo, qhi), relative to m0
                            // (empty for keys >= seq_k; rows >= seq_q are never visible).
                            const RowRange rr = rows_seeing_key_mm(sv, p.window_left, p.window_right,
                                                                   p.max_mm_ranges, n0 + kw0 + mt * 16 + g + 8 * hf);
                            const int qlo = rr.lo - m0 - 2 * t;
                            const int qhi = rr.hi - m0 - 2 * t;
#pragma unroll
                            for (int nt = 0; nt < BM / 8; ++nt)
#pragma unroll
                                for (int e = 0; e < 2; ++e) {
                                    const int qc = nt * 8 + e;  // column - 2t
                                    if (qc < qlo || qc >= qhi) {
                                        sT[mt][nt][2 * hf + e] = 0.f;
                                        dpt[mt][nt][2 * hf + e] = 0.f;
                                    }
                                }
                        }
                }
            }

            // Pᵀ and dSᵀ as A fragments (the m16n8 C layout of n8 tiles 2kk, 2kk+1 is the
            // m16k16 A layout of k-step kk).
            uint32_t pp[MT][BM / 16][4];
            uint32_t dsp[MT][BM / 16][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk) {
                    pp[mt][kk][0] = E::pack(sT[mt][2 * kk][0], sT[mt][2 * kk][1]);
                    pp[mt][kk][1] = E::pack(sT[mt][2 * kk][2], sT[mt][2 * kk][3]);
                    pp[mt][kk][2] = E::pack(sT[mt][2 * kk + 1][0], sT[mt][2 * kk + 1][1]);
                    pp[mt][kk][3] = E::pack(sT[mt][2 * kk + 1][2], sT[mt][2 * kk + 1][3]);
                    dsp[mt][kk][0] = E::pack(dpt[mt][2 * kk][0], dpt[mt][2 * kk][1]);
                    dsp[mt][kk][1] = E::pack(dpt[mt][2 * kk][2], dpt[mt][2 * kk][3]);
                    dsp[mt][kk][2] = E::pack(dpt[mt][2 * kk + 1][0], dpt[mt][2 * kk + 1][1]);
                    dsp[mt][kk][3] = E::pack(dpt[mt][2 * kk + 1][2], dpt[mt][2 * kk + 1][3]);
                }

            // dV += Pᵀ dO and dK += dSᵀ Q over this CTA's columns; B from dO/Q transposed.
            {
                const uint32_t dO_t = sdO_t + st * kTileQBytes;
                const uint32_t Q_t = sQ_t + st * kTileQBytes;
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
                    for (int dp = 0; dp < DO / 16; ++dp) {
                        uint32_t bf[4];
                        ldmatrix_x4_trans(bf, frag_addr<CPR>(dO_t, kk * 16, dp * 2));
#pragma unroll
                        for (int mt = 0; mt < MT; ++mt) {
                            E::mma(dv[mt][2 * dp], pp[mt][kk], bf[0], bf[1]);
                            E::mma(dv[mt][2 * dp + 1], pp[mt][kk], bf[2], bf[3]);
                        }
                        ldmatrix_x4_trans(bf, frag_addr<CPR>(Q_t, kk * 16, dp * 2));
#pragma unroll
                        for (int mt = 0; mt < MT; ++mt) {
                            E::mma(dk[mt][2 * dp], dsp[mt][kk], bf[0], bf[1]);
                            E::mma(dk[mt][2 * dp + 1], dsp[mt][kk], bf[2], bf[3]);
                        }
                    }
            }

            if constexpr (Cfg::kDSInQ) {
                // Every warp is done with this item's Q and dO: the next dO may load, and
                // dS may overwrite Q.
                __syncthreads();
                if (has_next) load_do(h_next, m0_next, 0);
                cp_async_commit();
            }
            // dSᵀ → shared memory, [key][query], 4 bytes per (row, column pair).
            {
                char* sdS_bytes = reinterpret_cast<char*>(sdS);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
                        for (int j = 0; j < 4; ++j) {
                            const int row = kw0 + mt * 16 + g + 8 * (j & 1);
                            const int nt = 2 * kk + (j >> 1);
                            *reinterpret_cast<uint32_t*>(sdS_bytes + swizzle<CPRM>(row, nt) * 16 + t * 4) =
                                dsp[mt][kk][j];
                        }
            }
            __syncthreads();
            if constexpr (ST == 1 && !Cfg::kDSInQ) {
                // Q and dO of this item are dead (the barrier above): load the next ones.
                if (has_next) load_do(h_next, m0_next, 0);
                cp_async_commit();
                if (has_next) load_q(h_next, m0_next, 0);
                cp_async_commit();
            }

            // dQ of the item's rows = dS K over this CTA's columns; the warp's QR × QC part,
            // in kDQPasses passes of QCH columns.
#pragma unroll 1
            for (int pass = 0; pass < kDQPasses; ++pass) {
                uint32_t kt[QCH / 16];
#pragma unroll
                for (int dn = 0; dn < QCH / 16; ++dn) kt[dn] = kDQPasses == 1 ? sK_t[dn] : sK_t_addr(dn, pass);
                float dq[QR / 16][QCH / 8][4];
#pragma unroll
                for (int mq = 0; mq < QR / 16; ++mq)
#pragma unroll
                    for (int dt = 0; dt < QCH / 8; ++dt)
#pragma unroll
                        for (int e = 0; e < 4; ++e) dq[mq][dt][e] = 0.f;
#pragma unroll
                for (int kk = 0; kk < BN / 16; ++kk) {
                    uint32_t af[QR / 16][4];
#pragma unroll
                    for (int mq = 0; mq < QR / 16; ++mq) ldmatrix_x4_trans(af[mq], sdS_a[mq] + kk * 16 * CPRM * 16);
#pragma unroll
                    for (int dn = 0; dn < QCH / 16; ++dn) {
                        uint32_t bf[4];
                        ldmatrix_x4_trans(bf, kt[dn] + kk * 16 * CPR * 16);
#pragma unroll
                        for (int mq = 0; mq < QR / 16; ++mq) {
                            E::mma(dq[mq][2 * dn], af[mq], bf[0], bf[1]);
                            E::mma(dq[mq][2 * dn + 1], af[mq], bf[2], bf[3]);
                        }
                    }
                }
                const int row0 = m0 + q0w;
                float* dqa = bp.dq_accum + (static_cast<int64_t>(sv.ws_q0) + static_cast<int64_t>(h) * bp.ws_rows_q + row0) * bp.head_dim_inst +
                             d_off + c0w + pass * QCH;
#pragma unroll
                for (int mq = 0; mq < QR / 16; ++mq)
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) {
                        const int r = mq * 16 + g + 8 * hf;
                        if (row0 + r >= sv.sq) continue;  // padding rows add nothing
                        float* dst = dqa + static_cast<int64_t>(r) * bp.head_dim_inst + 2 * t;
#pragma unroll
                        for (int dt = 0; dt < QCH / 8; ++dt) {
                            atomicAdd(dst + dt * 8, dq[mq][dt][2 * hf]);
                            atomicAdd(dst + dt * 8 + 1, dq[mq][dt][2 * hf + 1]);
                        }
                    }
            }

            if constexpr (Cfg::kDSInQ) {
                // Every warp is done reading dS from the Q tile: the next Q may load.
                __syncthreads();
                if (has_next) load_q(h_next, m0_next, 0);
                cp_async_commit();
            }
            h = h_next;
            m0 = m0_next;
        }
        cp_async_wait<0>();
    }

    // ---- epilogue: dK (× scale) and dV of the warp's keys, this CTA's columns ----
    const float scale = p.scale;
    const int kvh = cta.kvh;
    if (bp.dk_accum != nullptr) {
        if (items == 0) return;  // the accumulators start at zero
        const int64_t base =
            (sv.ws_k0 + static_cast<int64_t>(kvh) * bp.ws_rows_k + n0 + kw0) * bp.head_dim_inst + d_off;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int64_t row = base + static_cast<int64_t>(mt * 16 + g + 8 * hf) * bp.head_dim_inst + 2 * t;
#pragma unroll
                for (int dt = 0; dt < DO / 8; ++dt) {
                    atomicAdd(bp.dk_accum + row + dt * 8, dk[mt][dt][2 * hf] * scale);
                    atomicAdd(bp.dk_accum + row + dt * 8 + 1, dk[mt][dt][2 * hf + 1] * scale);
                    atomicAdd(bp.dv_accum + row + dt * 8, dv[mt][dt][2 * hf]);
                    atomicAdd(bp.dv_accum + row + dt * 8 + 1, dv[mt][dt][2 * hf + 1]);
                }
            }
        return;
    }
    const bool even_d = (p.head_dim & 1) == 0;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int key = n0 + kw0 + mt * 16 + g + 8 * hf;
            if (key >= sv.sk) continue;
            const int64_t row = ((sv.kout_row0 + key) * p.kv_heads + kvh) * p.head_dim;
            uint16_t* dkr = static_cast<uint16_t*>(bp.dk) + row;
            uint16_t* dvr = static_cast<uint16_t*>(bp.dv) + row;
#pragma unroll
            for (int dt = 0; dt < DO / 8; ++dt) {
                const int col = d_off + dt * 8 + 2 * t;
                if (col >= p.head_dim) continue;
                const uint32_t kp = E::pack(dk[mt][dt][2 * hf] * scale, dk[mt][dt][2 * hf + 1] * scale);
                const uint32_t vp = E::pack(dv[mt][dt][2 * hf], dv[mt][dt][2 * hf + 1]);
                if (even_d) {
                    // col and head_dim even: 4-byte aligned, and col + 1 < head_dim.
                    *reinterpret_cast<uint32_t*>(dkr + col) = kp;
                    *reinterpret_cast<uint32_t*>(dvr + col) = vp;
                } else {
                    dkr[col] = static_cast<uint16_t>(kp & 0xffffu);
                    dvr[col] = static_cast<uint16_t>(vp & 0xffffu);
                    if (col + 1 < p.head_dim) {
                        dkr[col + 1] = static_cast<uint16_t>(kp >> 16);
                        dvr[col + 1] = static_cast<uint16_t>(vp >> 16);
                    }
                }
            }
        }
}

// ---- element conversions ----------------------------------------------------------------

template <class T>
__device__ __forceinline__ float to_f32(T x);
template <>
__device__ __forceinline__ float to_f32<__half>(__half x) {
    return __half2float(x);
}
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 x) {
    return __bfloat162float(x);
}
template <>
__device__ __forceinline__ float to_f32<float>(float x) {
    return x;
}
template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
    return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
    return x;
}

// ---- preprocess: D = rowsum(dO∘O), lse in log2 units ------------------------------------

constexpr int kPreThreads = 256;

template <class T>
__device__ __forceinline__ void preprocess(const FattnBwdParams& bp) {
    const FattnParams& p = bp.fwd;
    const int lane = threadIdx.x % 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kPreThreads / 32) + threadIdx.x / 32;
    const int64_t rows = static_cast<int64_t>(p.batch) * p.heads * bp.seq_q_pad;
    if (row >= rows) return;  // whole warps
    const int64_t bh = row / bp.seq_q_pad;
    const int i = static_cast<int>(row - bh * bp.seq_q_pad);
    const int b = static_cast<int>(bh / p.heads);
    const int h = static_cast<int>(bh - static_cast<int64_t>(b) * p.heads);
    // Dense: this row's workspace word is `row`, its LSE (b, h, i). Packed: sequence b's rows
    // i < len are real and the next 128 padding (all a query block may read past the end),
    // at packed_ws_base; the LSE is (h, total_q).
    int len = p.seq_q;
    int64_t q_row0 = 0, ws = row, lse_at = bh * p.seq_q + i;
    if (p.cu_seqlens_q != nullptr) {
        const int q0 = p.cu_seqlens_q[b];
        len = p.cu_seqlens_q[b + 1] - q0;
        if (i >= len + 128) return;  // whole warps
        q_row0 = q0;
        ws = packed_ws_base(q0, b) + static_cast<int64_t>(h) * bp.ws_rows_q + i;
        lse_at = static_cast<int64_t>(h) * bp.total_q + q0 + i;
    }
    float acc = 0.f;
    float lse2 = CUDART_INF_F;
    if (i < len) {
        const int64_t r = q_row0 + i;
        const T* o = static_cast<const T*>(p.o) + b * p.o_batch_stride + r * p.o_seq_stride + h * p.o_head_stride;
        const T* d = static_cast<const T*>(bp.d_o) + b * bp.do_batch_stride + r * bp.do_seq_stride +
                     h * bp.do_head_stride;
        if (p.vec_out != 0 && bp.vec_do != 0) {
            constexpr int kE = 16 / sizeof(T);
            for (int c = lane * kE; c < p.head_dim; c += 32 * kE) {
                union {
                    uint4 v;
                    T e[kE];
                } ov, dv;
                ov.v = *reinterpret_cast<const uint4*>(o + c);
                dv.v = *reinterpret_cast<const uint4*>(d + c);
#pragma unroll
                for (int e = 0; e < kE; ++e) acc = fmaf(to_f32(ov.e[e]), to_f32(dv.e[e]), acc);
            }
        } else {
            for (int c = lane; c < p.head_dim; c += 32) acc = fmaf(to_f32(o[c]), to_f32(d[c]), acc);
        }
        const float l = p.lse[lse_at];
        // -inf (no visible key) → +inf: exp2(x - lse) is then exactly 0, never inf - inf.
        lse2 = l == -CUDART_INF_F ? CUDART_INF_F : l * kLog2e;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {
        bp.dsum[ws] = acc;
        bp.lse_log2[ws] = lse2;
    }
}

// ---- convert: f32 accumulator → output dtype --------------------------------------------

constexpr int kConvertThreads = 128;

// One CTA per output row (dense: b · seq + s; packed: the packed row, whose sequence b is
// found in cu_seqlens): its heads × head_dim contiguous elements.
template <class T>
__device__ __forceinline__ void convert(const FattnBwdConvertParams& c) {
    const int row = blockIdx.x;
    int64_t ws0;  // workspace row of (head 0, this row)
    if (c.cu_seqlens != nullptr) {
        // The last sequence b with cu[b] <= row (empty sequences own no rows).
        int lo = 0, hi = c.batch - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (c.cu_seqlens[mid] <= row) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        const int cu = c.cu_seqlens[lo];
        ws0 = packed_ws_base(cu, lo) + (row - cu);
    } else {
        const int b = row / c.seq;
        ws0 = static_cast<int64_t>(b) * c.heads * c.seq_pad + (row - b * c.seq);
    }
    const int n = c.heads * c.head_dim;
    T* dst = static_cast<T*>(c.dst) + static_cast<int64_t>(row) * n;
    for (int e = threadIdx.x; e < n; e += kConvertThreads) {
        const int h = e / c.head_dim;
        const int col = e - h * c.head_dim;
        const float x = c.src[(ws0 + static_cast<int64_t>(h) * c.seq_pad) * c.d_inst + col] * c.scale;
        dst[e] = from_f32<T>(x);
    }
}

// ---- f32: plain FMA ---------------------------------------------------------------------

namespace f32 {
constexpr int kThreads = 256;
// Query rows = keys per tile: 16 up to head dim 256, 8 above (the tiles of K, V, Q and dO
// then fit in the 99 KiB at d512). Phase A: kPairThreads threads per (query, key) pair, each
// a strided part of the dot products; phases B and C: kColGroups threads per row, columns
// cg + kColGroups·u, u < kMaxColsPerThread.
__host__ __device__ constexpr int block_for(int max_head_dim) { return max_head_dim <= 256 ? 16 : 8; }
constexpr int kMaxColsPerThread = 16;
template <int kMaxD>
struct Cfg {
    static constexpr int kBlock = block_for(kMaxD);
    static constexpr int kBlockN = kBlock;
    static constexpr int kBlockM = kBlock;
    static constexpr int kPairThreads = kThreads / (kBlock * kBlock);
    static constexpr int kColGroups = kThreads / kBlock;
    static_assert(kMaxD <= kColGroups * kMaxColsPerThread, "head dim above the kernel's columns");
    static_assert(kPairThreads >= 1 && kPairThreads <= 32 && (kPairThreads & (kPairThreads - 1)) == 0,
                  "pair threads: a power of two within a warp");
};
// K and V rows padded to an odd stride: threads reading one column of consecutive rows hit
// distinct banks.
__host__ __device__ constexpr int k_stride(int head_dim) { return head_dim % 2 == 0 ? head_dim + 1 : head_dim; }
__host__ __device__ constexpr int smem_floats(int block, int head_dim) {
    return 2 * block * k_stride(head_dim) + 2 * block * head_dim + 2 * block * (block + 1) + 2 * block;
}
}  // namespace f32

template <int kMaxD, bool kPacked>
__device__ __forceinline__ void bwd_f32(const FattnBwdParams& bp) {
    using C = f32::Cfg<kMaxD>;
    constexpr int kBlockN = C::kBlockN;
    constexpr int kBlockM = C::kBlockM;
    constexpr int kPT = C::kPairThreads;
    constexpr int kCG = C::kColGroups;
    constexpr int kMaxCols = f32::kMaxColsPerThread;
    constexpr int kThreads = f32::kThreads;
    const FattnParams& p = bp.fwd;
    const int D = p.head_dim;
    const int KS = f32::k_stride(D);
    extern __shared__ uint4 smem_u4[];
    float* sK = reinterpret_cast<float*>(smem_u4);
    float* sV = sK + kBlockN * KS;
    float* sQ = sV + kBlockN * KS;
    float* sdO = sQ + kBlockM * D;
    float* sP = sdO + kBlockM * D;
    float* sdS = sP + kBlockM * (kBlockN + 1);
    float* sLse = sdS + kBlockM * (kBlockN + 1);
    float* sDsum = sLse + kBlockM;

    const int tid = threadIdx.x;
    BwdCta cta = bwd_cta(static_cast<int>(blockIdx.x), p.seq_q, p.seq_k, p.kv_heads, p.kv_group, p.window_left,
                         p.window_right, bp.kv_splits, bp.heads_per_split, kBlockN, kBlockM, 1, D,
                         static_cast<int>(gridDim.x), kPacked ? 0 : p.tail_groups);
    const SeqView sv = seq_view<kPacked>(bp, cta.b);
    cta_rows(cta, sv, p.window_left, p.window_right, p.max_mm_ranges, bp.heads_per_split, kBlockN, kBlockM);
    const int b = cta.b;
    const int kvh = cta.kvh;
    const int n0 = cta.n0;

    // Phase A: threads (pair, part) = one (query pi, key pj) pair of the tile, the columns
    // part + kPT·c of its dot products. Phases B and C: thread (r, cg) = key r (B) or query r
    // (C), columns cg + kCG·u.
    const int pair = tid / kPT;
    const int part = tid % kPT;
    const int pi = pair / kBlockN;
    const int pj = pair % kBlockN;
    const int r = tid / kCG;
    const int cg = tid % kCG;

    float dk[kMaxCols], dv[kMaxCols];
#pragma unroll
    for (int u = 0; u < kMaxCols; ++u) {
        dk[u] = 0.f;
        dv[u] = 0.f;
    }

    if (cta.items > 0) {
        const float* kg = k_head_rows<float>(p, b, kvh) + static_cast<int64_t>(sv.k_row0) * p.k_seq_stride;
        const float* vg = v_head_rows<float>(p, b, kvh) + static_cast<int64_t>(sv.k_row0) * p.v_seq_stride;
        for (int idx = tid; idx < kBlockN * D; idx += kThreads) {
            const int rr = idx / D, c = idx - (idx / D) * D;
            const bool ok = n0 + rr < sv.sk;
            sK[rr * KS + c] = ok ? kg[static_cast<int64_t>(n0 + rr) * p.k_seq_stride + c] : 0.f;
            sV[rr * KS + c] = ok ? vg[static_cast<int64_t>(n0 + rr) * p.v_seq_stride + c] : 0.f;
        }
        const int key = n0 + pj;
        const RowRange vis = rows_seeing_key_mm(sv, p.window_left, p.window_right, p.max_mm_ranges, key);

        for (int it = 0; it < cta.items; ++it) {
            const int h = cta.h_first + it / cta.nm;
            const int m0 = (cta.mb_begin + it % cta.nm) * kBlockM;
            __syncthreads();  // the previous item's phases are done (and K/V stored, first time)
            const float* qg = q_head_rows<float>(p, b, h) + static_cast<int64_t>(sv.q_row0) * p.q_seq_stride;
            const float* dog = static_cast<const float*>(bp.d_o) + b * bp.do_batch_stride +
                               static_cast<int64_t>(sv.q_row0) * bp.do_seq_stride + h * bp.do_head_stride;
            for (int idx = tid; idx < kBlockM * D; idx += kThreads) {
                const int rr = idx / D, c = idx - (idx / D) * D;
                const bool ok = m0 + rr < sv.sq;
                sQ[idx] = ok ? qg[static_cast<int64_t>(m0 + rr) * p.q_seq_stride + c] : 0.f;
                sdO[idx] = ok ? dog[static_cast<int64_t>(m0 + rr) * bp.do_seq_stride + c] : 0.f;
            }
            const int64_t stat_row = static_cast<int64_t>(sv.ws_q0) + static_cast<int64_t>(h) * bp.ws_rows_q + m0;
            if (tid < kBlockM) {
                sLse[tid] = bp.lse_log2[stat_row + tid];
                sDsum[tid] = bp.dsum[stat_row + tid];
            }
            __syncthreads();

            // Phase A: s, dP, P, dS for pair (pi, pj), its kPT threads adjacent lanes.
            {
                const float* qi = sQ + pi * D;
                const float* oi = sdO + pi * D;
                const float* kj = sK + pj * KS;
                const float* vj = sV + pj * KS;
                float dot = 0.f, dp = 0.f;
                for (int c = part; c < D; c += kPT) {
                    dot = fmaf(qi[c], kj[c], dot);
                    dp = fmaf(oi[c], vj[c], dp);
                }
#pragma unroll
                for (int off = kPT / 2; off > 0; off /= 2) {
                    dot += __shfl_xor_sync(0xffffffffu, dot, off);
                    dp += __shfl_xor_sync(0xffffffffu, dp, off);
                }
                const int row = m0 + pi;
                float pr = 0.f, ds = 0.f;
                if (row >= vis.lo && row < vis.hi) {
                    const float alibi_log2 =
                        p.alibi_slopes != nullptr ? p.alibi_slopes[b * p.heads + h] * kLog2e : 0.f;
                    float th;
                    const float x = mod_score_log2(p, dot, alibi_log2, row + (sv.sk - sv.sq) - key, th);
                    pr = exp2_approx(x - sLse[pi]);
                    ds = pr * (dp - sDsum[pi]) * (1.f - th * th);
                }
                if (part == 0) {
                    sP[pi * (kBlockN + 1) + pj] = pr;
                    sdS[pi * (kBlockN + 1) + pj] = ds;
                }
            }
            __syncthreads();

            // Phase B: dV[r] += Σ_i P[i][r] dO[i], dK[r] += Σ_i dS[i][r] Q[i].
            for (int i = 0; i < kBlockM; ++i) {
                const float pv = sP[i * (kBlockN + 1) + r];
                const float dsv = sdS[i * (kBlockN + 1) + r];
#pragma unroll
                for (int u = 0; u < kMaxCols; ++u) {
                    const int c = cg + kCG * u;
                    if (c < D) {
                        dv[u] = fmaf(pv, sdO[i * D + c], dv[u]);
                        dk[u] = fmaf(dsv, sQ[i * D + c], dk[u]);
                    }
                }
            }
            // Phase C: dQ[r] = Σ_j dS[r][j] K[j], added to the accumulator.
            if (m0 + r < sv.sq) {
                float* dqa = bp.dq_accum + (stat_row + r) * bp.head_dim_inst;
#pragma unroll
                for (int u = 0; u < kMaxCols; ++u) {
                    const int c = cg + kCG * u;
                    if (c < D) {
                        float acc = 0.f;
#pragma unroll
                        for (int j = 0; j < kBlockN; ++j) acc = fmaf(sdS[r * (kBlockN + 1) + j], sK[j * KS + c], acc);
                        atomicAdd(dqa + c, acc);
                    }
                }
            }
        }
    }

    const float scale = p.scale;
    const int key = n0 + r;
    if (bp.dk_accum != nullptr) {
        if (cta.items == 0) return;
        const int64_t row = (sv.ws_k0 + static_cast<int64_t>(kvh) * bp.ws_rows_k + key) * bp.head_dim_inst;
#pragma unroll
        for (int u = 0; u < kMaxCols; ++u) {
            const int c = cg + kCG * u;
            if (c < D) {
                atomicAdd(bp.dk_accum + row + c, dk[u] * scale);
                atomicAdd(bp.dv_accum + row + c, dv[u]);
            }
        }
        return;
    }
    if (key >= sv.sk) return;
    const int64_t row = ((sv.kout_row0 + key) * p.kv_heads + kvh) * D;
#pragma unroll
    for (int u = 0; u < kMaxCols; ++u) {
        const int c = cg + kCG * u;
        if (c < D) {
            static_cast<float*>(bp.dk)[row + c] = dk[u] * scale;
            static_cast<float*>(bp.dv)[row + c] = dv[u];
        }
    }
}

}  // namespace bwd
}  // namespace fattn

// ---- entry points ---------------------------------------------------------------------------
//
// build.rs expands FATTN_INSTANCE_BWD, FATTN_INSTANCE_BWD_PREPROCESS and
// FATTN_INSTANCE_BWD_CONVERT once per instance of this file (the generated lists
// FATTN_INSTANCES_BWD_SM80, FATTN_INSTANCES_BWD_PREPROCESS_SM80, FATTN_INSTANCES_BWD_CONVERT_SM80)
// into its extern "C" kernel, and checks that the numbers the crate launches it with are what
// the traits compute. VARIANT: 0 plain, 1 softcap/ALiBi (`_mods`), 2 both (the softcap/ALiBi
// code behind a run-time switch: every instance since session 62). Each main-kernel
// instance (tensor-core and f32) has two entry points: NAME, the dense kernel, and
// NAME_varlen, the packed one (src/cuda/backward.rs picks by the problem's layout), so that
// the packed path's registers never change the dense kernel's allocation.

namespace fattn {
namespace bwd {
// The f32 kernel's shared memory for every head dim 1..=D is what the crate launches with
// (`table`: the generated fattn_gen::NAME_smem_bytes, index = head dim).
template <int D>
constexpr bool f32_smem_bytes_match(const unsigned (&table)[D + 1]) {
    for (int d = 1; d <= D; ++d) {
        if (table[d] != static_cast<unsigned>(f32::smem_floats(f32::block_for(D), d)) * 4u) return false;
    }
    return true;
}
}  // namespace bwd
}  // namespace fattn

#define FATTN_INSTANCE_BWD(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM, COL_SPLITS, LARGE_SMEM) \
    FATTN_BWD_ENTRY_##DTYPE(NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM, COL_SPLITS, LARGE_SMEM)
#define FATTN_BWD_ENTRY_F16(...) FATTN_BWD_ENTRY_TC(F16, __VA_ARGS__)
#define FATTN_BWD_ENTRY_BF16(...) FATTN_BWD_ENTRY_TC(BF16, __VA_ARGS__)

// LARGE_SMEM (src/cuda/instances.rs, bwd_large_smem): the bytes of the instance's large-smem
// tile (BwdTraitsLarge<D>), 0 for none; its entry points NAME_l and NAME_l_varlen are
// FATTN_BWD_LARGE_<LARGE_SMEM> below.
#define FATTN_BWD_ENTRY_TC(ELEM, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM, COL_SPLITS, LARGE_SMEM)              \
    static_assert(fattn::bwd::BwdTraitsLarge<D>::kSmemBytes == LARGE_SMEM,                                         \
                  #NAME ": large-smem tile bytes differ from src/cuda/instances.rs");                               \
    static_assert(VARIANT >= 0 && VARIANT <= 2, #NAME ": a tensor-core instance is plain, _mods or both");        \
    static_assert(fattn::bwd::BwdTraits<D>::kHeadDim == D, #NAME ": head dim");                                   \
    static_assert(fattn::bwd::BwdTraits<D>::kThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs"); \
    static_assert(fattn::bwd::BwdTraits<D>::kBlockM == ROWS, #NAME ": query rows differ from src/cuda/instances.rs");  \
    static_assert(fattn::bwd::BwdTraits<D>::kBlockN == KEYS, #NAME ": key block differs from src/cuda/instances.rs");  \
    static_assert(fattn::bwd::BwdTraits<D>::kDSplits == COL_SPLITS,                                                  \
                  #NAME ": column splits differ from src/cuda/instances.rs");                                        \
    static_assert(fattn::bwd::BwdTraits<D>::kSmemBytes == SMEM, #NAME ": smem bytes differ from src/cuda/instances.rs"); \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::BwdTraits<D>::kThreads,                                 \
                                                 fattn::bwd::BwdTraits<D>::kMinBlocksPerSM)                          \
        NAME(const __grid_constant__ FattnBwdParams p) {                                                             \
        fattn::bwd::bwd_tensor_core<fattn::bwd::BwdTraits<D>, fattn::ELEM, VARIANT != 0, false, VARIANT == 2>(p);    \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::BwdTraits<D>::kThreads,                                 \
                                                 fattn::bwd::BwdTraits<D>::kMinBlocksPerSM)                          \
        NAME##_varlen(const __grid_constant__ FattnBwdParams p) {                                                    \
        fattn::bwd::bwd_tensor_core<fattn::bwd::BwdTraits<D>, fattn::ELEM, VARIANT != 0, true, VARIANT == 2>(p);     \
    }                                                                                                                \
    FATTN_BWD_LARGE_##LARGE_SMEM(ELEM, NAME, D, VARIANT)

#define FATTN_BWD_ENTRY_F32(NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM, COL_SPLITS, LARGE_SMEM)                   \
    static_assert(VARIANT == 2 && SMEM == 0 && COL_SPLITS == 1 && LARGE_SMEM == 0,                                 \
                  #NAME ": one kernel for both variants, smem per head dim, no column split");                     \
    static_assert(fattn::bwd::f32::kThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs");       \
    static_assert(fattn::bwd::f32::Cfg<D>::kBlockM == ROWS, #NAME ": query rows differ from src/cuda/instances.rs"); \
    static_assert(fattn::bwd::f32::Cfg<D>::kBlockN == KEYS, #NAME ": key block differs from src/cuda/instances.rs"); \
    static_assert(fattn::bwd::f32_smem_bytes_match<D>(fattn_gen::NAME##_smem_bytes),                              \
                  #NAME ": smem bytes differ from src/cuda/instances.rs");                                         \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::f32::kThreads)                                        \
        NAME(const __grid_constant__ FattnBwdParams p) {                                                           \
        fattn::bwd::bwd_f32<D, false>(p);                                                                          \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::f32::kThreads)                                        \
        NAME##_varlen(const __grid_constant__ FattnBwdParams p) {                                                  \
        fattn::bwd::bwd_f32<D, true>(p);                                                                           \
    }

// The large-smem entry points (BwdTraitsLarge), dense and packed, of the instances whose
// LARGE_SMEM is not 0, with the instance's own VARIANT (the generated asserts above check the
// bytes; src/cuda/backward.rs loads them by name, NAME_l and NAME_l_varlen).
// FATTN_BWD_ENTRY_TC expands FATTN_BWD_LARGE_<LARGE_SMEM>: empty for 0, these entries for a
// tile size named here (a new size fails to compile until it is named).
#define FATTN_BWD_LARGE_ENTRY(ELEM, NAME, D, VARIANT)                                                                \
    static_assert(fattn::bwd::BwdTraitsLarge<D>::kThreads == fattn::bwd::BwdTraits<D>::kThreads &&                   \
                      fattn::bwd::BwdTraitsLarge<D>::kBlockM == fattn::bwd::BwdTraits<D>::kBlockM &&                 \
                      fattn::bwd::BwdTraitsLarge<D>::kBlockN == fattn::bwd::BwdTraits<D>::kBlockN &&                 \
                      fattn::bwd::BwdTraitsLarge<D>::kDSplits == fattn::bwd::BwdTraits<D>::kDSplits,                 \
                  #NAME "_l: the large tile launches with the instance's threads, rows, keys and splits");         \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::BwdTraitsLarge<D>::kThreads,                            \
                                                 fattn::bwd::BwdTraitsLarge<D>::kMinBlocksPerSM)                     \
        NAME##_l(const __grid_constant__ FattnBwdParams p) {                                                         \
        fattn::bwd::bwd_tensor_core<fattn::bwd::BwdTraitsLarge<D>, fattn::ELEM, VARIANT != 0, false, VARIANT == 2>(p); \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::BwdTraitsLarge<D>::kThreads,                            \
                                                 fattn::bwd::BwdTraitsLarge<D>::kMinBlocksPerSM)                     \
        NAME##_l_varlen(const __grid_constant__ FattnBwdParams p) {                                                  \
        fattn::bwd::bwd_tensor_core<fattn::bwd::BwdTraitsLarge<D>, fattn::ELEM, VARIANT != 0, true, VARIANT == 2>(p); \
    }
#define FATTN_BWD_LARGE_0(ELEM, NAME, D, VARIANT)
#define FATTN_BWD_LARGE_148480(ELEM, NAME, D, VARIANT) FATTN_BWD_LARGE_ENTRY(ELEM, NAME, D, VARIANT)

// The element type of each dtype tag.
#define FATTN_BWD_ELEM_F16 __half
#define FATTN_BWD_ELEM_BF16 __nv_bfloat16
#define FATTN_BWD_ELEM_F32 float

// Preprocess: one warp per (batch, head, padded row); ROWS = warps per block; no keys, no smem.
#define FATTN_INSTANCE_BWD_PREPROCESS(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)                 \
    static_assert(VARIANT == 2 && KEYS == 0 && SMEM == 0, #NAME ": both variants, no keys, no smem");          \
    static_assert(fattn::bwd::kPreThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs");    \
    static_assert(fattn::bwd::kPreThreads / 32 == ROWS, #NAME ": rows differ from src/cuda/instances.rs");     \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::kPreThreads)                                      \
        NAME(const __grid_constant__ FattnBwdParams p) {                                                       \
        fattn::bwd::preprocess<FATTN_BWD_ELEM_##DTYPE>(p);                                                     \
    }

// Convert: one block per (batch, seq) output row (ROWS = 1); no keys, no smem.
#define FATTN_INSTANCE_BWD_CONVERT(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)                    \
    static_assert(VARIANT == 2 && ROWS == 1 && KEYS == 0 && SMEM == 0, #NAME ": one row per block, no smem"); \
    static_assert(fattn::bwd::kConvertThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs"); \
    extern "C" __global__ void __launch_bounds__(fattn::bwd::kConvertThreads)                                  \
        NAME(const __grid_constant__ FattnBwdConvertParams p) {                                                \
        fattn::bwd::convert<FATTN_BWD_ELEM_##DTYPE>(p);                                                        \
    }
