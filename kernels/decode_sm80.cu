// Flash-decoding: attention of a few query rows (sq ≤ 16 per kv head group) against a long
// KV cache, split along the keys so that every SM streams its own slice of K and V.
//
// What it computes: what src/reference.rs defines: s = scale·<q,k>, softcap
// c·tanh(s/c), ALiBi -slope·|i + sk - sq - j|, bottom-right causal/window masks, f32 softmax,
// rows with no visible key output zeros.
//
// Work split. One block = (split of the key range, kv head, 16-row group, batch). The rows of
// a block are the (q head, query) pairs that share the kv head (GQA group × sq, padded to one
// m16 tile), so K and V are read from memory once per kv head, not once per q head. Each of
// the 4 warps owns every 4th 16-key tile of the split and streams it through its own cp.async
// ring (kStages deep, 16-byte coalesced copies, no block barriers in the loop; the next copy
// is issued before the wait for the current tile); QKᵀ and PV run on mma.sync m16n8k16 with
// f32 accumulators and the online softmax stays in registers. The warps merge through shared
// memory at the end.
//
// One launch. With one split the block writes the output. Otherwise it writes an unnormalized
// f32 partial (acc, max, sum), fences, and counts itself in on its tile's counter (one per
// (batch, kv head, row group)); the block that arrives last merges all splits of the tile into
// the output with every thread of the block, and zeroes the counter for the next launch
// (`arrive_last_split`, `merge_split_partials`). The counters are zero when the kernel starts:
// the host zeroes them once when it allocates them, every launch leaves them zero. On a
// compute-capability 9.0 GPU the host sets `defer_combine` instead: the split blocks store
// their partials and exit, and a second launch (kernels/decode_sm90.cu, programmatic
// dependent launch) merges them with the same code.
//
// Packed batches (varlen, paged): with cu_seqlens_q set, grid z is the sequence; a block maps
// its rows with the longest sequence's length and skips queries past its own, finds its
// sequence's key range itself (bottom-right masks and prefix ranges per sequence), and reads
// K/V pages through the block table: the split's table entries are staged in shared memory
// when the block starts (at most kSplitPages; the host sizes paged splits for it), then one
// lookup per 16-key tile when the page size is a multiple of 16, per row otherwise, all
// inline. Head dims above 256 run on the prefill kernel.
// Measured (H100, bf16, d128, host index tensors, criterion medians of two rounds in one call,
// lab/results/s10-paged-h100/): pages of 16 / 256 run at 0.959 / 0.980x the contiguous decode's
// GB/s of K+V on (8,32,8,1,8192) (114.4 / 112.0 µs against 109.8) and 0.960 / 0.981x on
// (32,32,8,1,4096) (201.8 / 197.4 against 193.7); the packed entry on the contiguous K/V 111.4 /
// 195.2. The gap had been 0.85-0.95x, and it was the instruction cache: ncu's per-instruction
// stall samples (lab/results/s10-paged-ncu-h100/) put 3289 "no instruction" samples in the packed
// kernel against 1146 in the dense one (the whole 2143-sample difference), most of them in the
// prologue, whose two tile copies were inlined with all three page modes, each chunk branching
// on alignment (15344 SASS instructions against 6152). The copies are now one branch per tile
// with the unaligned and per-row paths rolled, and the prologue's copies a rolled loop: 6440 and
// 3760 instructions, and the file compiles in half the time. With the index tensors on the GPU,
// validation reads them back first (a device-to-host copy that waits for the stream): 0.68-0.81x.
// Session 25 (H200, same-call A/B against c8db03a, 3 rounds, lab/results/s25-call1..3): one
// inlined tile copy for every layout (issue_tile) takes the bf16 d128 varlen instance from 255
// to 232 registers (d64 155 -> 128, the mod instance's spill gone) and its ncu duration 2-4%
// down at base clocks, but no bench row moved (0.999-1.001); staging all page entries before
// storing them (one round trip) moved nothing either (0.997-1.000, not kept). What moved the
// rows was the host: the index upload reused for equal values (src/packed.rs), 16-key pages
// 0.951 -> 0.970x (32,32,8,1,4096) and 0.951 -> 0.972x (8,32,8,1,8192), 256-key pages 0.984 /
// 0.982x, the packed entry 0.998 / 0.992x of the contiguous decode.
// ptxas (compute_80 → sm_90, session 25): the packed bf16 d128 entries 232 / 234 (modded)
// registers, no spills (255 and a 20-byte spill before issue_tile's single copy routine); the
// dense ones 222 / 226; d64 128 packed against 126 dense.
//
// Fragments without ldmatrix. A dot product does not care about the order of its terms, so
// the head dims are permuted: a thread reads 8 contiguous dims of Q and K with one 16-byte
// shared load and spreads them over two k16 steps (phys dim 8t+{0,1,2,3} ↔ logical 2t+{0,1},
// 2t+8+{0,1}). For PV the thread with n-index g owns the contiguous dims
// [g·D/8, (g+1)·D/8) of V and builds each B register from two keys with one byte permute;
// the accumulator of n-tile j then holds dims {2t, 2t+1}·D/8 + j. Shared rows are XOR
// swizzled per head dim so that both read patterns and the copies are conflict-free.
//
// Tiles: 16 rows × 16 keys per warp and stage; stages 3 (D ≤ 128) or 2 (D = 256). Shared
// memory: Q 16×D + 4 warps × stages × (K,V) 16×D, in the element type; D=128: 100 KB, two
// blocks per SM. Measured against 2 stages at 3 blocks/SM (+2-8 %) and 4 stages at 1 block/SM
// (+6-28 %) on the bench rows (H200, lab/README.md); on the H100, with the copy issued
// first, 4 stages at 1 block/SM are within 2.5 % either way and 2 stages at 3 blocks/SM
// 0-2 % slower.
//
// Measured through the crate (H100, bf16, D=128, criterion medians timed like do_bench, torch
// 2.11 SDPA in the same run, docs/results/h100-2026-11-22-session3.md run B): 109.9 / 66.5 /
// 15.5 / 195.5 / 31.9 µs on (8,32,8,1,8192), (1,32,8,1,32768), (1,32,8,1,2048),
// (32,32,8,1,4096), (1,32,8,4,8192): 1.01x, 1.03x, 1.05x, 1.03x cuDNN's time on the sq = 1 rows
// and 3.1x faster than cuDNN on the sq = 4 row; 2442 and 2019 GB/s of K+V on the two long
// rows, where a pure read of the same bytes tops out at 2672 and 2479 GB/s
// (lab/stream/stream_lab.cu). What is left to cuDNN is the streaming loop (ncu: its split
// kernel reads (8,32,8,1,8192) in 92 µs, ours with the combine in 100-102 µs), not the combine.
//
// Lean tiles (session 23, H200, lab/results/s23-call1 and s23-call2). ncu on (32,32,8,1,4096)
// had this kernel issuing 53.3M warp instructions against cuDNN's 19.3M for the same grid
// (256 blocks of 128 threads, 2 per SM) at 77.8 % of DRAM peak against 86.1 %: 400 of a
// tile's 813 instructions were the copy's per-chunk bounds and 64-bit addresses (16 cp.async),
// and 64 of its FMULs the accumulator rescale. Full tiles now copy with per-thread pointer
// steps and one XOR per copy (`load_kv_tile`), and the rescale runs only when a row max
// moved (bit-identical). Outcome: 30.4M instructions, 84.5 % of DRAM peak, 172.8k cycles
// against 189.4k (cuDNN 168.5k); (8,32,8,1,8192) 93.6k cycles against 96.4k (cuDNN 92.2k).
// Same-call A/B, criterion medians of 3 rounds alternating: (1,32,8,1,2048) 14.2 against 14.8
// µs, (1,32,8,1,32768) 49.9 / 51.4, (1,32,8,4,8192) 23.7 / 23.9, (32,32,8,1,4096) 138.0 /
// 141.3, (8,32,8,1,8192) 80.0 / 81.7; cuDNN in that call 13.6 / 50.6 / 100.8 / 135.7 / 80.1.
//
// The block's end (sessions 38-39, H200, lab/results/s38-call8, s39-call1, s39-call3). ncu had the
// four warps' merge through shared memory at 28.3-way bank conflicts (2 068 store wavefronts a
// block where 256 do) and the one-split output in 2-byte stores: the merge buffer is now
// XOR-swizzled (`merge_index`) and the output rows go out in 16-byte stores. Same-call A/B, 2
// rounds: (32,32,8,1,4096) 135.9 -> 134.9 µs, (8,32,8,1,8192) 78.7 both. Issue 14's table on
// it (s39-call3, cuDNN time / ours, two torch runs): 8x8192 1.010 / 1.006, 32k 1.021 / 1.019,
// 2048 0.970 / 0.993, 32x4096 0.989 / 0.988, Sq 4 8192 4.33 / 4.34.
//
// Session 46 (H200, lab/results/s46-call1..4): in ncu with clean caches this kernel, cuDNN's
// and a pure read of the same bytes tie on (32,32,8,1,4096) (122-127 µs; 88.6-91% of DRAM
// peak); under do_bench it stays 0.985-0.998 of cuDNN depending on the machine. Read shapes
// (block-cooperative, 2-8 heads a block, 2-4 stages), K/V placement and the output's free
// moved nothing; evict-first K/V copies (FATTN_DECODE_L2_EVICT_FIRST, a lab knob) cost that
// row 4% and the 2048 row 4.5%, and took 7% off the 32k row.
//
// Session 52 (H200, lab/results/s52-call4..6): the tile's arithmetic is 1.8% of the
// (32,32,8,1,4096) row under do_bench (a lab image with none, FATTN_DECODE_LAB_NO_MATH=1: 131.5
// µs against 133.9; without PV alone, =2: 132.8), 2.4% of (8,32,8,1,8192). Blocks of at most 8
// rows at head dim 128 (the GQA 4:1 and 8:1 one-query decodes) now run PV transposed, Oᵀ = Vᵀ
// Pᵀ with 16 head dims as the m16 rows and the rows as n8: 8 mma a tile instead of 16, the
// same V loads and byte permutes, P's fragment from S's accumulators with no shuffle, 32
// accumulators a thread instead of 64 (ptxas: the dense bf16 d128 entry 222 → 228 registers,
// no spills; 64 and 256 keep the m16 PV, where the second path cost registers and spills).
// Same-call A/B against FATTN_DECODE_TRANSPOSED_PV=0, 2 rounds (call 5): (32,32,8,1,4096)
// 133.3 / 133.5 µs against 134.1 / 134.1 (-0.6%; cuDNN 133.6 in that call), the other decode
// rows within their round-to-round spread (2048 12.9 / 13.1 against 12.8 / 12.8, 8x8192 78.4 /
// 78.4 against 78.3 / 78.2). Tests of both generations, the sweeps and memcheck pass.
//
// Session 53 (H200, lab/results/s53-call1): the same blocks now compute QKᵀ transposed too, Sᵀ
// = K Qᵀ with 16 keys as the m16 rows (8 mma a tile instead of 16), the online softmax over
// Sᵀ's key axis (a row's 16 keys on the 8 lanes of one t, sums per lane until the block's end)
// and Pᵀ's B fragment through movmatrix.trans (ptxas: dense bf16 d128 entry 237 registers, no
// spills). Same-call A/B, 3 rounds, against the transposed PV alone: (1,32,8,1,2048) 12.8 /
// 12.8 / 12.8 µs against 13.1 / 13.0 / 13.1 (-1.8%), (32,32,8,1,4096) 133.0 / 132.9 / 132.7
// against 133.3 / 133.4 / 133.6 (-0.4%), 8x8192, 32k and Sq 4 within ±0.2%; cuDNN in that call
// 13.2, 132.7, 79.2, 50.1, 100.9. Decode tests of both generations, the sweeps and memcheck
// pass on it (and, as the default, the whole GPU binary, the oracle, racecheck and synccheck,
// s53-call2/3). ncu on (32,32,8,1,4096) (s53-call4): 124.8-127.6 µs at 87.9-89.5% of DRAM
// peak, 5.9% tensor-pipe activity, 237 registers; cuDNN's kernel 124.1-125.9 µs at 89.1-90.0%.
//
// Session 54 (H200, lab/results/s54-call1): the three copies of a row's key range, diagonal and
// ALiBi slope set-up (rows g and g + 8, the transposed rows 2t and 2t + 1, the f32 path's 8
// rows) are one `row_facts` helper; same arithmetic, new SASS. Decode tests of both
// generations, varlen/paged decode, LSE, the sweeps, the sanitizer subset and memcheck pass;
// same-call A/B against session 53's image, 3 rounds, µs: 2048 12.9 / 12.8 / 12.8 against 12.8
// / 12.8 / 12.8, 32x4096 135.3 / 135.1 / 135.4 against 135.4 / 135.3 / 135.2, 8x8192, 32k and
// Sq 4 within ±0.5%.
//
// Session 56 (H200, lab/results/s56-call1..3; not kept, diffs there). (1) Each stage's K half
// refilled right after the tile's QKᵀ and its V half after PV, two cp.async groups a tile (the K
// copies ~60% of a tile's arithmetic earlier): (32,32,8,1,4096) +0.3%, (1,32,8,1,32768) +0.8%
// (same-call A/B, 4 rounds). (2) QKᵀ in two accumulator chains of D/32 mma instead of one of
// D/16 (ptxas: d128 237 → 238 registers): the 2048 row -2.0% in call 1 (4 rounds), +0.6% in
// call 2 (2 rounds) and -0.5% in call 3 (3 rounds); 32x4096, 8x8192 and 32k within ±0.3%
// throughout. Neither the ring's hold on a stage nor the tile's mma chain is what the
// 32x4096 row waits on.

#include "common/kv_addr.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"
#include "common/softmax.cuh"

namespace fattn_decode {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;       // query rows per block: one m16 tile
constexpr int kTileKeys = 16;   // keys per warp per stage
constexpr float kNegInf = -__builtin_huge_valf();

template <int D, int kStages_ = (D <= 128 ? 3 : 2)>
struct Traits {
    static_assert(D == 64 || D == 128 || D == 256, "instantiated head dims: 64, 128, 256");
    static_assert(kStages_ >= 2, "the ring needs two stages");
    static constexpr int kChunks = D / 8;                 // 16-byte chunks in a row
    static constexpr int kStages = kStages_;
    static constexpr int kTileElems = kTileKeys * D;
    static constexpr int kVChunks = D / 64;              // V chunks a thread reads per key
    static constexpr int kSmemElems = kRows * D + kWarps * kStages * 2 * kTileElems;
    static constexpr bool kQInRegs = D <= 128;
    // The f32 merge buffer [warps][rows][D] reuses the K/V ring.
    static_assert(kWarps * kRows * D * 4 <= kWarps * kStages * 2 * kTileElems * 2, "merge buffer fits");
    static_assert((kTileKeys * kChunks) % 32 == 0, "whole copy rounds per warp");

    // XOR swizzle of the low 3 chunk bits by row, chosen so that the Q/K fragment reads
    // (rows g, chunk 4c+t), the V reads (rows 2t+e, chunks g·D/64+u) and row-major copies
    // each touch 8 distinct 16-byte bank groups per quarter warp.
    static __device__ __forceinline__ int swizzle(int row) {
        const int b0 = row & 1, b1 = (row >> 1) & 1, b2 = (row >> 2) & 1;
        if (D == 64) return (b1 << 1) | ((b2 ^ b0) << 2);
        if (D == 128) return b1 | ((b2 ^ b0) << 2);
        return b1 | (b2 << 1) | (b0 << 2);
    }
    static __device__ __forceinline__ int offset(int row, int chunk) {
        return row * D + ((chunk ^ swizzle(row)) << 3);
    }
};

template <typename T> struct Elem;
// The mma instruction and the f32 pair packing come from the shared element tags.
template <> struct Elem<__nv_bfloat16> : fattn::BF16 {
    static __device__ __forceinline__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
};
template <> struct Elem<__half> : fattn::F16 {
    static __device__ __forceinline__ __half from_float(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
};
template <> struct Elem<float> {
    static __device__ __forceinline__ float from_float(float x) { return x; }
    static __device__ __forceinline__ float to_float(float x) { return x; }
};

using fattn::cp_async_16_to;
using fattn::cp_async_16_to_prefetch;
using fattn::cp_async_commit;
using fattn::cp_async_wait;
using fattn::inv_row_sum;
using fattn::max_ref;
using fattn::quad_max;
using fattn::quad_sum;
using fattn::smem_addr;

#ifdef FATTN_LAB_DECODE_STAMPS
// Lab build only (NVCC_FLAGS=-DFATTN_LAB_DECODE_STAMPS=K, examples/lab_decode_stamps.rs):
// launch K of the process's dense decode split launches (counted by their blocks' arrivals;
// launches on one stream do not overlap) stores, per block < kLabBlocks (linear block id),
// its entry in absolute %globaltimer ns and its SM, and per warp the phases below in ns
// after the block's entry. The combine launch (kernels/decode_sm90.cu) stores its own,
// `g_lab_comb_*`, for its launch K. Plain global stores. Phases: 0 warp start, 1 Q landed
// (after the block barrier), 2 + 2n tile n landed, 3 + 2n tile n done (n < 8), 18 partials
// stored, 19 block end.
constexpr int kLabBlocks = 132, kLabDecPhases = 20, kLabTiles = 8;
__device__ unsigned long long g_lab_dec_entry[kLabBlocks];
__device__ unsigned int g_lab_dec_smid[kLabBlocks];
__device__ unsigned long long g_lab_dec[kLabBlocks * 4 * kLabDecPhases];
__device__ unsigned int g_lab_dec_blocks;
// The combine: per block < kLabBlocks, entry (absolute ns), then ns after it: 0 the wait for
// the split grid released, 1 the block's stores done.
__device__ unsigned long long g_lab_comb_entry[kLabBlocks];
__device__ unsigned long long g_lab_comb[kLabBlocks * 2];
__device__ unsigned int g_lab_comb_smid[kLabBlocks];
__device__ unsigned int g_lab_comb_blocks;
using fattn::lab_now;
__device__ __forceinline__ unsigned lab_block_id() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ __forceinline__ unsigned lab_grid_blocks() { return gridDim.x * gridDim.y * gridDim.z; }
// Thread 0 at a block's entry (t0): its launch's number by the arrivals on `blocks`; for
// launch K, blocks below kLabBlocks store their entry and SM.
__device__ __forceinline__ unsigned lab_enter(unsigned* blocks, unsigned long long* entry, unsigned* smid,
                                              unsigned long long t0) {
    const unsigned launch = atomicAdd(blocks, 1u) / lab_grid_blocks();
    if (launch == FATTN_LAB_DECODE_STAMPS && lab_block_id() < kLabBlocks) {
        entry[lab_block_id()] = t0;
        smid[lab_block_id()] = fattn::lab_smid();
    }
    return launch;
}
// The combine block's launch number and entry (set by combine_block, kernels/decode_sm90.cu).
__shared__ unsigned lab_comb_launch;
__shared__ unsigned long long lab_comb_t0;
#define FATTN_LAB_COMB_PHASE(k)                                                                         \
    do {                                                                                                \
        if (lab_comb_launch == FATTN_LAB_DECODE_STAMPS && threadIdx.x == 0 && lab_block_id() < kLabBlocks) \
            g_lab_comb[lab_block_id() * 2 + (k)] = lab_now() - lab_comb_t0;                             \
    } while (0)
#define FATTN_LAB_DEC_PHASE(k)                                                                      \
    do {                                                                                            \
        if (lab_launch == FATTN_LAB_DECODE_STAMPS && lane == 0 && lab_block_id() < kLabBlocks)      \
            g_lab_dec[(lab_block_id() * 4 + warp) * kLabDecPhases + (k)] = lab_now() - lab_t0;      \
    } while (0)
#else
#define FATTN_LAB_DEC_PHASE(k) ((void)0)
#endif

// Copies the 8 elements [src, src + 8) of which the first `valid` exist (the rest read as 0)
// into 16 bytes of shared memory. `aligned` is block-uniform.
template <typename T>
__device__ __forceinline__ void load_chunk(T* dst, const T* src, int valid, bool aligned) {
    static_assert(sizeof(T) == 2, "16-bit elements");
    if (aligned) {
        // src-size 0 zero-fills without reading; src is then any mapped address.
        cp_async_16_to(smem_addr(dst), src, valid * 2);
    } else {
        uint16_t e[8];
#pragma unroll
        for (int x = 0; x < 8; ++x) e[x] = x < valid ? reinterpret_cast<const uint16_t*>(src)[x] : 0;
        uint4 w;
        w.x = e[0] | (uint32_t(e[1]) << 16);
        w.y = e[2] | (uint32_t(e[3]) << 16);
        w.z = e[4] | (uint32_t(e[5]) << 16);
        w.w = e[6] | (uint32_t(e[7]) << 16);
        *reinterpret_cast<uint4*>(dst) = w;
    }
}

__device__ __forceinline__ uint4 lds128(const void* p) { return *reinterpret_cast<const uint4*>(p); }

// The 8×8 matrix of 16-bit elements whose row lane / 4, columns 2·(lane % 4) and + 1, this
// lane holds in x, transposed into the same layout (movmatrix, sm_75+).
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
}

// The L2 prefetch size of the full tiles' K/V copies below (common/ptx.cuh
// cp_async_16_to_prefetch): 0, none, unless a lab build sets it
// (NVCC_FLAGS=-DFATTN_DECODE_L2_PREFETCH=128 or 256).
#ifndef FATTN_DECODE_L2_PREFETCH
#define FATTN_DECODE_L2_PREFETCH 0
#endif
// Whether those copies allocate their L2 lines evict-first (common/ptx.cuh
// cp_async_16_to_policy): 0, no, unless a lab build sets it (NVCC_FLAGS=-DFATTN_DECODE_L2_EVICT_FIRST=1).
#ifndef FATTN_DECODE_L2_EVICT_FIRST
#define FATTN_DECODE_L2_EVICT_FIRST 0
#endif
// Lab only, timing bounds (NVCC_FLAGS / lab/fatbin-variant.sh -DFATTN_DECODE_LAB_NO_MATH=N):
// 1 skips every tile's arithmetic (QKᵀ, softmax, PV) and keeps its copies and waits; 2 skips
// only PV. The output is wrong on purpose: such an image says how much of a row's time the
// tile's arithmetic costs, what any cut of it could at most give (lab/README.md, session 52).
#ifndef FATTN_DECODE_LAB_NO_MATH
#define FATTN_DECODE_LAB_NO_MATH 0
#endif
// Whether blocks of at most 8 rows (head dim 128) run transposed (decode_block, `rows8`): QKᵀ
// as Sᵀ = K Qᵀ and PV as Oᵀ = Vᵀ Pᵀ, 8 mma a tile each instead of 16. 1 unless a lab build sets
// 0 (the A/B against the m16 tiles of every block).
#ifndef FATTN_DECODE_TRANSPOSED_PV
#define FATTN_DECODE_TRANSPOSED_PV 1
#endif

// One warp copies a 16-key tile of K and V (keys [key0, key0+16), zero past `key_limit`)
// into its stage. The aligned case is one branch per tile and 16-byte cp.async copies,
// unrolled; the unaligned one (scalar loads, rare) stays a rolled loop, so that the copy
// code of the loop stays small (instruction-cache misses, see the header).
template <typename T, int D>
__device__ __forceinline__ void load_kv_tile(const FattnParams& p, const T* k_head, const T* v_head, T* sk,
                                             T* sv, int key0, int key_limit, int lane) {
    using Tr = Traits<D>;
    if (p.vec_in && p.head_dim == D && key0 + kTileKeys <= key_limit) {
        // A full tile (every row a key, every chunk a head dim; warp-uniform): lane copies
        // chunk c = lane % kChunks of rows r0 + it·kR, r0 = lane / kChunks. The swizzle is
        // linear over GF(2) in the row's low bits and r0 < kR, so offset(r0 + it·kR, c) =
        // (offset(r0, c) ^ swizzle(it·kR) << 3) + it·kR·D: one XOR with a constant and an
        // immediate per copy, two 64-bit adds for the sources. The general path below spends
        // ~24 instructions per copy on per-chunk bounds and addresses (ncu, session 23: 400
        // instructions per 16-key tile for 16 copies).
        constexpr int kR = 32 / Tr::kChunks;
        static_assert(kR * Tr::kChunks == 32 && kTileKeys % kR == 0, "whole rows per copy round");
        const int r0 = lane / Tr::kChunks, c = lane % Tr::kChunks;
        const T* ks = k_head + static_cast<int64_t>(key0 + r0) * p.k_seq_stride + c * 8;
        const T* vs = v_head + static_cast<int64_t>(key0 + r0) * p.v_seq_stride + c * 8;
        const int64_t k_step = static_cast<int64_t>(kR) * p.k_seq_stride;
        const int64_t v_step = static_cast<int64_t>(kR) * p.v_seq_stride;
        const int base = Tr::offset(r0, c);
        const uint32_t sk_addr = smem_addr(sk), sv_addr = smem_addr(sv);
#if FATTN_DECODE_L2_EVICT_FIRST
        const uint64_t policy = fattn::l2_evict_first_policy();
#endif
#pragma unroll
        for (int it = 0; it < kTileKeys / kR; ++it) {
            const int off = (base ^ (Tr::swizzle(it * kR) << 3)) + it * kR * D;
#if FATTN_DECODE_L2_EVICT_FIRST
            fattn::cp_async_16_to_policy(sk_addr + off * static_cast<int>(sizeof(T)), ks, policy);
            fattn::cp_async_16_to_policy(sv_addr + off * static_cast<int>(sizeof(T)), vs, policy);
#else
            cp_async_16_to_prefetch<FATTN_DECODE_L2_PREFETCH>(sk_addr + off * static_cast<int>(sizeof(T)), ks);
            cp_async_16_to_prefetch<FATTN_DECODE_L2_PREFETCH>(sv_addr + off * static_cast<int>(sizeof(T)), vs);
#endif
            ks += k_step;
            vs += v_step;
        }
        return;
    }
    auto chunk_of = [&](int it, int& off, const T*& ks, const T*& vs) {
        const int idx = it * 32 + lane;
        const int row = idx / Tr::kChunks, chunk = idx % Tr::kChunks;
        const int key = key0 + row;
        int valid = p.head_dim - chunk * 8;
        valid = key < key_limit ? (valid < 0 ? 0 : (valid > 8 ? 8 : valid)) : 0;
        ks = valid ? k_head + key * p.k_seq_stride + chunk * 8 : k_head;
        vs = valid ? v_head + key * p.v_seq_stride + chunk * 8 : v_head;
        off = Tr::offset(row, chunk);
        return valid;
    };
    if (p.vec_in) {
#pragma unroll
        for (int it = 0; it < Tr::kTileElems / 8 / 32; ++it) {
            int off;
            const T *ks, *vs;
            const int valid = chunk_of(it, off, ks, vs);
            // src-size 0 zero-fills without reading; src is then any mapped address.
            cp_async_16_to(smem_addr(sk + off), ks, valid * 2);
            cp_async_16_to(smem_addr(sv + off), vs, valid * 2);
        }
    } else {
#pragma unroll 1
        for (int it = 0; it < Tr::kTileElems / 8 / 32; ++it) {
            int off;
            const T *ks, *vs;
            const int valid = chunk_of(it, off, ks, vs);
            load_chunk(sk + off, ks, valid, false);
            load_chunk(sv + off, vs, valid, false);
        }
    }
}

// A paged split's block-table entries, staged in shared memory when the block starts: the
// pages that hold keys [split_begin, split_end) of its sequence, first_page onwards. The host
// keeps a split within kSplitPages pages (src/cuda/decode.rs, DECODE_SPLIT_PAGES); a block that
// would need more traps rather than read past the array.
constexpr int kSplitPages = 512;

// load_kv_tile for a paged sequence whose page size is not a multiple of 16: each key's row
// through the staged page list. `k_base`/`v_base` are the kv head's start in the cache.
template <typename T, int D>
__device__ __forceinline__ void load_kv_tile_paged(const FattnParams& p, const T* k_base, const T* v_base,
                                                   const int32_t* pages, int first_page, T* sk, T* sv, int key0,
                                                   int key_limit, int lane) {
    using Tr = Traits<D>;
#pragma unroll 1  // rare (pages not a multiple of 16 keys): small code before speed
    for (int it = 0; it < Tr::kTileElems / 8 / 32; ++it) {
        const int idx = it * 32 + lane;
        const int row = idx / Tr::kChunks, chunk = idx % Tr::kChunks;
        const int key = key0 + row;
        int valid = p.head_dim - chunk * 8;
        valid = key < key_limit ? (valid < 0 ? 0 : (valid > 8 ? 8 : valid)) : 0;
        const T* ks = k_base;
        const T* vs = v_base;
        if (valid) {
            const int page = key / p.page_block_size;
            const int64_t blk = pages[page - first_page];
            const int64_t in_page = key - page * p.page_block_size;
            ks = k_base + blk * p.k_batch_stride + in_page * p.k_seq_stride + chunk * 8;
            vs = v_base + blk * p.v_batch_stride + in_page * p.v_seq_stride + chunk * 8;
        }
        const int off = Tr::offset(row, chunk);
        load_chunk(sk + off, ks, valid, p.vec_in);
        load_chunk(sv + off, vs, valid, p.vec_in);
    }
}

// The block's sequence: dense, batch entry b (q0 = 0, len_q = seq_q); packed, sequence b
// (kv_addr.cuh). Rows of a block map to (q head, query i) with i = r % seq_q for the launch's
// seq_q (the longest sequence when packed); rows with i >= len_q belong to no query.
struct BlockSeq {
    int q0, len_q;
    __device__ __forceinline__ bool has_row(const FattnParams& p, int r) const {
        return r < p.kv_group * p.seq_q && r % p.seq_q < len_q;
    }
};

// Where row (b, q head h, query i) of the block's sequence keeps its log-sum-exp.
template <bool kPacked>
__device__ __forceinline__ float* decode_lse_slot(const FattnParams& p, const BlockSeq& sq, int b, int h, int i) {
    if constexpr (kPacked) {
        return fattn::lse_slot_packed(p, fattn::SeqSpan{sq.q0, 0, sq.len_q, 0}, h, i);
    } else {
        return fattn::lse_slot(p, b, h, i);
    }
}

// Merges the warps' (max, sum) per row into block_ml; every thread sees the result.
__device__ __forceinline__ void merge_row_stats(const float (&merge_ml)[kWarps][kRows][2], float (&block_ml)[kRows][2]) {
    __syncthreads();
    if (threadIdx.x < kRows) {
        const int row = threadIdx.x;
        float m = kNegInf;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) m = fmaxf(m, merge_ml[w][row][0]);
        float l = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) l += merge_ml[w][row][1] * exp2f(merge_ml[w][row][0] - max_ref(m));
        block_ml[row][0] = m;
        block_ml[row][1] = l;
    }
    __syncthreads();
}

// Counts this split block in on its tile's counter (one per (batch, kv head, row group)) once
// its partial is stored. Returns, block-uniform, whether it arrived last: then every split's
// partial is visible to it, and it has zeroed the counter for the next launch.
__device__ __forceinline__ bool arrive_last_split(const FattnParams& p) {
    __shared__ int is_last;
    __threadfence();  // this thread's partial stores are visible on the device...
    __syncthreads();  // ...for every thread of the block, before the block counts as arrived
    if (threadIdx.x == 0) {
        unsigned int* counter = p.tile_counters + (long long)blockIdx.z * gridDim.y + blockIdx.y;
        const unsigned int arrived = atomicAdd(counter, 1u);
        is_last = arrived == (unsigned int)p.num_splits - 1u;
        if (is_last) *counter = 0u;  // every split has arrived: zero for the next launch
    }
    __syncthreads();
    const bool last = is_last != 0;
    if (last) __threadfence();  // the other blocks' partials, published before their arrivals, are read after ours
    return last;
}

// Merges the tile's split partials into the output (flash-decoding's combine): out =
// Σ_s 2^(m_s - M) o_s / Σ_s 2^(m_s - M) l_s, M = max_s m_s. Run by one block of kThreads per
// tile, once every split's partial is visible: the tile's last split block (`arrive_last_split`)
// or the separate combine launch of kernels/decode_sm90.cu, with the same arithmetic, so both
// give the same bits.
//
// Parallel over the whole block: an item is (row, 4 dims); when the tile has fewer items than
// threads, P = 2, 4, ... 32 lanes of one warp share an item and take every P-th split. Each lane
// merges its splits online (a running max, rescaled once per batch of kBatch splits whose
// loads are all in flight together), then the P lanes merge by shuffles. Partials are read
// with ld.global.cg (L2): they were written by other SMs. The items go in rounds of
// kThreads / P; the block takes rounds first_round, first_round + round_step, ... (the split
// kernel's last block all of them; the combine launch spreads them over blocks), and an item's
// arithmetic does not depend on which block takes it.
//
// kBatch is the loads a lane keeps in flight: 16 for per-block partials; the combine launch
// takes 4 for per-warp ones (kLanePartials per lane), whose 16-slot batches were three
// quarters predicated-off work (ncu session 23: 1 080 instructions per warp).
//
// kWaitGrid (the combine launch): the block computes its first round's indices and addresses,
// then waits for the split grid (`griddepcontrol.wait`) right before its first partial load,
// so that only the loads and the arithmetic follow the split kernel's end (ncu session 23:
// the integer prologue, three runtime divisions among it, was half a combine warp's
// instructions, all of them after the wait).
template <typename T, int D, bool kPacked, int kBatch = 16, bool kWaitGrid = false>
__device__ __forceinline__ void merge_split_partials(const FattnParams& p, const BlockSeq& sq, int b, int kvh,
                                                     int row_group, int first_round = 0, int round_step = 1) {
    constexpr int kChunks4 = D / 4;
    const int rows_valid = min(kRows, p.kv_group * p.seq_q - row_group * kRows);
    const int items = rows_valid * kChunks4;
    // Partials: one per split, or one per split and warp (defer_combine 2, the combine launch).
    const int n = p.num_splits * (p.defer_combine == 2 ? kWarps : 1);
    int lanes = 1;  // block-uniform
    while (lanes < 32 && items * lanes * 2 <= kThreads) lanes *= 2;
    // Per-warp partials: lanes enough for at most kLanePartials partials each, so that each
    // block reads few of them (the combine spreads the extra rounds over blocks;
    // src/cuda/decode.rs `combine_rounds` follows both rules).
    constexpr int kLanePartials = 4;
    if (p.defer_combine == 2)
        while (lanes < 32 && n > kLanePartials * lanes) lanes *= 2;
    // lanes is a power of two: shifts, not runtime divisions.
    const int lane_shift = __ffs(lanes) - 1;
    const int sub = threadIdx.x & (lanes - 1);
    const int per_round = kThreads >> lane_shift;
    const long long rows_total = (long long)p.batch * p.seq_q * p.heads;
    bool waited = !kWaitGrid;
    // Every lane runs the same number of rounds, so the shuffles below see a full warp.
    for (int base = first_round * per_round; base < items; base += round_step * per_round) {
        const int item = base + (threadIdx.x >> lane_shift);
        const int row = item < items ? item / kChunks4 : 0, c4 = item < items ? item % kChunks4 : 0;
        const int r = row_group * kRows + row;
        // (q head in the group, query) of row r; sq = 1 (plain decode) needs no division.
        const int hg = p.seq_q == 1 ? r : r / p.seq_q, i = p.seq_q == 1 ? 0 : r - hg * p.seq_q;
        const bool valid = item < items && r < p.kv_group * p.seq_q && i < sq.len_q;  // sq.has_row(p, r)
        const int h = kvh * p.kv_group + hg;
        const long long slot0 = ((long long)b * p.seq_q + i) * p.heads + h;
        float m = kNegInf, l = 0.f;
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
        if (!waited) {
            // Every split block's partial stores are visible after this (the split grid has
            // completed and flushed its memory).
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
#ifdef FATTN_LAB_DECODE_STAMPS
            FATTN_LAB_COMB_PHASE(0);
#endif
        }
        for (int s0 = sub; s0 < n; s0 += kBatch * lanes) {
            float2 ml[kBatch];
            float4 x[kBatch];
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const int s = s0 + u * lanes;
                if (valid && s < n) {
                    const long long slot = s * rows_total + slot0;
                    ml[u] = __ldcg(reinterpret_cast<const float2*>(p.partial_ml) + slot);
                    x[u] = __ldcg(reinterpret_cast<const float4*>(p.partial_o + slot * D) + c4);
                } else {
                    ml[u] = make_float2(kNegInf, 0.f);
                    x[u] = make_float4(0.f, 0.f, 0.f, 0.f);
                }
            }
            float m_new = m;
#pragma unroll
            for (int u = 0; u < kBatch; ++u) m_new = fmaxf(m_new, ml[u].x);
            const float m_ref = max_ref(m_new);
            const float alpha = exp2f(m - m_ref);
            l *= alpha;
            o.x *= alpha, o.y *= alpha, o.z *= alpha, o.w *= alpha;
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const float w = exp2f(ml[u].x - m_ref);
                l += w * ml[u].y;
                o.x += w * x[u].x, o.y += w * x[u].y, o.z += w * x[u].z, o.w += w * x[u].w;
            }
            m = m_new;
        }
        for (int off = 1; off < lanes; off *= 2) {
            const float m_o = __shfl_xor_sync(0xffffffffu, m, off);
            const float l_o = __shfl_xor_sync(0xffffffffu, l, off);
            float4 o_o;
            o_o.x = __shfl_xor_sync(0xffffffffu, o.x, off);
            o_o.y = __shfl_xor_sync(0xffffffffu, o.y, off);
            o_o.z = __shfl_xor_sync(0xffffffffu, o.z, off);
            o_o.w = __shfl_xor_sync(0xffffffffu, o.w, off);
            const float m_new = fmaxf(m, m_o);
            const float m_ref = max_ref(m_new);
            const float a = exp2f(m - m_ref), a_o = exp2f(m_o - m_ref);
            l = l * a + l_o * a_o;
            o.x = o.x * a + o_o.x * a_o, o.y = o.y * a + o_o.y * a_o;
            o.z = o.z * a + o_o.z * a_o, o.w = o.w * a + o_o.w * a_o;
            m = m_new;
        }
        if (valid && sub == 0) {
            if (p.lse != nullptr && c4 == 0) *decode_lse_slot<kPacked>(p, sq, b, h, i) = fattn::row_lse(m, l);
            const float inv = inv_row_sum(l);  // no visible key: zeros
            T* dst = static_cast<T*>(p.o) + b * p.o_batch_stride + (sq.q0 + i) * p.o_seq_stride + h * p.o_head_stride;
            const float os[4] = {o.x * inv, o.y * inv, o.z * inv, o.w * inv};
#pragma unroll
            for (int x = 0; x < 4; ++x)
                if (4 * c4 + x < p.head_dim) dst[4 * c4 + x] = Elem<T>::from_float(os[x]);
        }
    }
}

// Where dim d of row wr (warp · kRows + row) of the merge buffer ([warps][rows][D] f32) lives:
// the row's 16-byte chunks XOR-swizzled by the row (and, at D = 256, by the chunk's group of
// eight), so that the bf16 warps' float4 stores (lanes g, t: 8 rows × 4 column groups), the
// f32 warps' scalar stores and store_block_rows's float4 loads (4 rows × 8 parts a warp) each
// spread over the eight 16-byte bank groups, four lanes apiece: no conflict. The plain
// row-major layout put every lane of a store in one bank group (the column groups lie 32 floats
// apart): ncu had the (32,32,8,1,4096,128) decode at 28.3-way conflicts, 2 068 shared store
// wavefronts per block where 256 do, and the loads 16-way, all at the end of a block, when
// its keys are read (session 38, lab/results/s38-call8/).
template <int D>
__device__ __forceinline__ int merge_index(int wr, int d) {
    static_assert(D % 32 == 0, "whole groups of eight 16-byte chunks per row");
    const int c4 = d >> 2;
    const int key = (D % 256 == 0 ? wr ^ (c4 >> 3) : wr) & 7;
    return wr * D + ((c4 ^ key) << 2) + (d & 3);
}

// Sums the warps' rescaled accumulators (merge_o: [warps][rows][D] f32, merge_index) and writes the block's
// rows: the output when there is one split, else the f32 partial (all D dims; the padded ones
// are zero) and its (max, sum), and the tile's last split block combines.
template <typename T, int D, bool kPacked>
__device__ __forceinline__ void store_block_rows(const FattnParams& p, const float* merge_o,
                                                 const float (&block_ml)[kRows][2], const BlockSeq& sq, int b,
                                                 int kvh, int row_group, int split) {
    constexpr int kPart = D / 8;  // 8 threads per row, kPart contiguous dims each
    const int row = threadIdx.x / 8, part = threadIdx.x % 8;
    const int r = row_group * kRows + row;
    if (sq.has_row(p, r)) {
        const int hg = r / p.seq_q, i = r % p.seq_q, h = kvh * p.kv_group + hg;
        const float m = block_ml[row][0], l = block_ml[row][1];
        const int d0 = part * kPart;
        float o[kPart];
        static_assert(kPart % 4 == 0, "a part is whole 16-byte chunks");
#pragma unroll
        for (int x = 0; x < kPart; x += 4) {
            // The warps' sums in warp order, as one scalar at a time gave them.
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int w = 0; w < kWarps; ++w) {
                const float4 a = *reinterpret_cast<const float4*>(merge_o + merge_index<D>(w * kRows + row, d0 + x));
                v.x += a.x, v.y += a.y, v.z += a.z, v.w += a.w;
            }
            o[x] = v.x, o[x + 1] = v.y, o[x + 2] = v.z, o[x + 3] = v.w;
        }
        if (p.num_splits == 1) {
            if (p.lse != nullptr && part == 0) *decode_lse_slot<kPacked>(p, sq, b, h, i) = fattn::row_lse(m, l);
            const float inv = inv_row_sum(l);  // no visible key: zeros
            T* dst = static_cast<T*>(p.o) + b * p.o_batch_stride + (sq.q0 + i) * p.o_seq_stride + h * p.o_head_stride;
            // 16-byte stores where the thread's dims lie inside the head and start on 16 bytes
            // (every output the host gives the kernel does: its own, or a caller's that starts
            // aligned, src/cuda/mod.rs), else one element at a time. One 2-byte store per dim
            // used 2 of each 32-byte sector it sent to L2 (ncu, session 38 call 8: the
            // (32,32,8,1,4096,128) decode's 16 store instructions a thread, at the end of a block).
            constexpr int kVec = 16 / static_cast<int>(sizeof(T));
            bool stored = false;
            if constexpr (kPart % kVec == 0) {
                if (d0 + kPart <= p.head_dim && reinterpret_cast<uintptr_t>(dst + d0) % 16 == 0) {
#pragma unroll
                    for (int x = 0; x < kPart; x += kVec) {
                        union {
                            uint4 u;
                            T e[kVec];
                        } pack;
#pragma unroll
                        for (int y = 0; y < kVec; ++y) pack.e[y] = Elem<T>::from_float(o[x + y] * inv);
                        *reinterpret_cast<uint4*>(dst + d0 + x) = pack.u;
                    }
                    stored = true;
                }
            }
            if (!stored) {
#pragma unroll
                for (int x = 0; x < kPart; ++x)
                    if (d0 + x < p.head_dim) dst[d0 + x] = Elem<T>::from_float(o[x] * inv);
            }
        } else {
            const long long rows_total = (long long)p.batch * p.seq_q * p.heads;
            const long long slot = split * rows_total + ((long long)b * p.seq_q + i) * p.heads + h;
            float4* dst = reinterpret_cast<float4*>(p.partial_o + slot * D + d0);
#pragma unroll
            for (int x = 0; x < kPart; x += 4) dst[x / 4] = make_float4(o[x], o[x + 1], o[x + 2], o[x + 3]);
            if (part == 0) reinterpret_cast<float2*>(p.partial_ml)[slot] = make_float2(m, l);
        }
    }
    // Deferred (defer_combine): the combine launch that follows merges them.
    if (p.num_splits > 1 && !p.defer_combine && arrive_last_split(p))
        merge_split_partials<T, D, kPacked>(p, sq, b, kvh, row_group);
}

// The swizzle works on 128-byte groups of 8 chunks, so the dynamic shared memory must start on
// 128 bytes. With __align__(16) it started after the static shared variables, at byte 656
// (0x290): every chunk moved by one bank group, the cp.async shared stores conflicted and were
// replayed, and each replay asked L2 for its sectors again. ncu on (32,32,8,1,4096): 33.6M L2
// sector requests from the SMs instead of 16.8M, kernel 208.9 µs against 190.7 µs; do_bench
// (H100) 109.2 / 65.8 / 14.7 / 195.3 / 31.8 µs at 1024-byte alignment against 117.2 / 71.3 /
// 15.7 / 213.6 / 33.6 µs at 16 on the five bench rows. (The decode lab, which also includes
// the prefill kernel file with its __align__(1024), had hidden this.)
constexpr int kSmemAlign = 128;

// A block's sequence and the keys its rows see, [key_begin, key_end): the host's union for a
// dense launch; a packed sequence's own, from its first and last rows, with key_begin rounded
// down to 64 so that every 16-key tile lies in one page of a paged cache whose page size is a
// multiple of 16 (the host sizes the splits for that rounding, src/cuda/decode.rs).
struct BlockKeys {
    BlockSeq seq;
    fattn::SeqMask mask;
    int k0;  // the sequence's first k/v row (unpaged packed), else 0
    int key_begin, key_end;
};
template <bool kPacked>
__device__ __forceinline__ BlockKeys block_keys(const FattnParams& p, int b) {
    if constexpr (!kPacked) {
        return BlockKeys{BlockSeq{0, p.seq_q}, fattn::dense_mask(p), 0, p.key_begin, p.key_end};
    } else {
        const fattn::SeqSpan sp = fattn::seq_span<true>(p, b);
        const fattn::SeqMask m = fattn::packed_mask(p, b, sp.len_q, sp.len_k);
        int kb = 0, ke = 0;
        if (sp.len_q > 0) {
            kb = fattn::key_range(p, m, 0).lo / 64 * 64;
            ke = max(kb, fattn::key_range(p, m, sp.len_q - 1).hi);
        }
        return BlockKeys{BlockSeq{sp.q0, sp.len_q}, m, sp.k0, kb, ke};
    }
}

// What row r (of the block's row groups: GQA head × query) may see of this split: its key
// range [lo, hi) clipped to the split's end, its diagonal and its ALiBi slope. A row past the
// sequence keeps the block's key range (its scores are never stored).
struct RowFacts {
    int lo, hi, diag;
    float slope;
};
template <bool kScoreMod>
__device__ __forceinline__ RowFacts row_facts(const FattnParams& p, const BlockKeys& bk, int r, int b, int kvh,
                                              int split_end) {
    RowFacts f{bk.key_begin, bk.key_end, 0, 0.f};
    if (bk.seq.has_row(p, r)) {
        const int hg = r / p.seq_q, i = r % p.seq_q;
        const fattn::KeyRange keys = fattn::key_range(p, bk.mask, i);
        f.lo = keys.lo;
        f.hi = keys.hi;
        f.diag = bk.mask.diag(i);
        if (kScoreMod && p.alibi_slopes) f.slope = p.alibi_slopes[b * p.heads + kvh * p.kv_group + hg];
    }
    f.hi = min(f.hi, split_end);
    return f;
}

template <typename T, int D, bool kScoreMod, bool kPacked, int kStages = Traits<D>::kStages>
__device__ __forceinline__ void decode_block(const FattnParams& p) {
    using Tr = Traits<D, kStages>;
    using E = Elem<T>;
    extern __shared__ __align__(kSmemAlign) unsigned char smem_raw[];
    T* smem_q = reinterpret_cast<T*>(smem_raw);
    T* smem_kv = smem_q + kRows * D;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int split = blockIdx.x;
    const int kvh = blockIdx.y / p.row_groups, row_group = blockIdx.y % p.row_groups;
    const int b = blockIdx.z;
    const BlockKeys bk = block_keys<kPacked>(p, b);
#ifdef FATTN_LAB_DECODE_STAMPS
    __shared__ unsigned lab_launch;
    __shared__ unsigned long long lab_t0;
    if (tid == 0) {
        lab_t0 = lab_now();
        lab_launch = kPacked ? ~0u : lab_enter(&g_lab_dec_blocks, g_lab_dec_entry, g_lab_dec_smid, lab_t0);
    }
    __syncthreads();
    FATTN_LAB_DEC_PHASE(0);
#endif

    const int split_begin = bk.key_begin + split * p.keys_per_split;
    const int split_end = min(split_begin + p.keys_per_split, bk.key_end);
    const int n_tiles = split_end > split_begin ? (split_end - split_begin + kTileKeys - 1) / kTileKeys : 0;
    const int my_tiles = warp < n_tiles ? (n_tiles - warp + kWarps - 1) / kWarps : 0;

    const T* q_base = static_cast<const T*>(p.q) + b * p.q_batch_stride + bk.seq.q0 * p.q_seq_stride;
    // Packed: the kv head's rows of the sequence (unpaged) or of the whole cache (paged).
    const int32_t* table = kPacked ? fattn::block_table_row(p, b) : nullptr;
    const T* k_head = kPacked ? static_cast<const T*>(p.k) + kvh * p.k_head_stride +
                                    (table == nullptr ? bk.k0 * p.k_seq_stride : 0)
                              : fattn::k_head_rows<T>(p, b, kvh);
    const T* v_head = kPacked ? static_cast<const T*>(p.v) + kvh * p.v_head_stride +
                                    (table == nullptr ? bk.k0 * p.v_seq_stride : 0)
                              : fattn::v_head_rows<T>(p, b, kvh);
    // Paged: the split's block-table entries go to shared memory once, so that no tile's copy
    // waits on a dependent global load of its page (a load per tile in the loop cost 25-40 %
    // of the contiguous GB/s, lab/README.md). Visible to every warp after the barrier.
    int first_page = 0;
    const int32_t* pages = nullptr;
    if constexpr (kPacked) {
        __shared__ int32_t split_pages[kSplitPages];
        if (table != nullptr) {
            first_page = split_begin / p.page_block_size;
            const int n_pages = split_end > split_begin ? (split_end - 1) / p.page_block_size - first_page + 1 : 0;
            if (n_pages > kSplitPages) __trap();  // the host's bound (DECODE_SPLIT_PAGES) broken
            for (int i = tid; i < n_pages; i += kThreads) split_pages[i] = table[first_page + i];
            __syncthreads();
            pages = split_pages;
        }
    }
    // Copies the 16-key tile at key0 into a stage.
    auto issue_tile = [&](T* st, int key0) {
        // One inlined copy of load_kv_tile serves the dense, the unpaged packed and the paged
        // (page size a multiple of 16) tile: only its sources and limit differ. Two copies
        // (one per layout) took the varlen instance from 222 to 255 registers (ptxas, sm_90).
        const T* ks = k_head;
        const T* vs = v_head;
        int kk = key0, limit = split_end;
        if (kPacked && pages != nullptr) {
            if (p.page_block_size % kTileKeys != 0) {
                load_kv_tile_paged<T, D>(p, k_head, v_head, pages, first_page, st, st + Tr::kTileElems, key0,
                                         split_end, lane);
                return;
            }
            // key0 is a multiple of 16: the tile lies in one page.
            const int page = key0 / p.page_block_size;
            const int64_t blk = pages[page - first_page];
            const int off = key0 - page * p.page_block_size;
            ks = k_head + blk * p.k_batch_stride + off * p.k_seq_stride;
            vs = v_head + blk * p.v_batch_stride + off * p.v_seq_stride;
            kk = 0;
            limit = split_end - key0;
        }
        load_kv_tile<T, D>(p, ks, vs, st, st + Tr::kTileElems, kk, limit, lane);
    };

    // Q rows: local row r ↔ (q head kvh·group + hg, query i), hg = r / sq, i = r % sq.
    for (int idx = tid; idx < kRows * Tr::kChunks; idx += kThreads) {
        const int row = idx / Tr::kChunks, chunk = idx % Tr::kChunks;
        const int r = row_group * kRows + row;
        int valid = 0;
        const T* src = q_base;
        if (bk.seq.has_row(p, r)) {
            const int hg = r / p.seq_q, i = r % p.seq_q;
            valid = min(max(p.head_dim - chunk * 8, 0), 8);
            if (valid) src = q_base + i * p.q_seq_stride + (kvh * p.kv_group + hg) * p.q_head_stride + chunk * 8;
        }
        load_chunk(smem_q + Tr::offset(row, chunk), src, valid, p.vec_in);
    }
    cp_async_commit();

    T* my_ring = smem_kv + warp * Tr::kStages * 2 * Tr::kTileElems;
#pragma unroll 1  // one copy of the tile-copy code here, one in the loop
    for (int s = 0; s < Tr::kStages - 1; ++s) {
        if (s < my_tiles) issue_tile(my_ring + s * 2 * Tr::kTileElems, split_begin + (warp + s * kWarps) * kTileKeys);
        cp_async_commit();
    }
    cp_async_wait<Tr::kStages - 1>();  // the Q group, the oldest
    __syncthreads();
    FATTN_LAB_DEC_PHASE(1);

    // Per-thread row facts for rows g and g + 8.
    const RowFacts rf[2] = {row_facts<kScoreMod>(p, bk, row_group * kRows + g, b, kvh, split_end),
                            row_facts<kScoreMod>(p, bk, row_group * kRows + g + 8, b, kvh, split_end)};
    // Tiles inside [common_lo, common_hi) need no per-element mask for any row.
    const int common_lo = fattn::key_range(p, bk.mask, max(bk.seq.len_q - 1, 0)).lo;
    const int common_hi = min(fattn::key_range(p, bk.mask, 0).hi, split_end);
    // At most 8 rows (GQA group × queries; row_groups is then 1): QKᵀ runs transposed, Sᵀ = K Qᵀ
    // with 16 keys as the m rows, and PV too, Oᵀ = Vᵀ Pᵀ on m16n8k16 with 16 head dims as the m
    // rows and the 8 rows as n: half the mma of the m16 tiles whose rows 8-15 are padding; the
    // accumulators then hold rows 2t, 2t+1 at the thread's dims g·D/8 + [0, D/8) in acc[0, D/16)
    // (acc[i][2h + c] = O[2t + c][g·D/8 + 2i + h]).
    // Head dim 128 only: at 64 the second path took the dense entry from 126 to 166 registers
    // (4 → 3 blocks an SM), at 256 from 252 to 255 with 12-48 bytes of spills (ptxas, session 52).
    const bool rows8 = FATTN_DECODE_TRANSPOSED_PV && D == 128 && p.kv_group * p.seq_q <= 8;
    // Row facts for rows 2t and 2t + 1 (the transposed tile's columns, `rows8` blocks).
    const RowFacts trf[2] = {row_facts<kScoreMod>(p, bk, row_group * kRows + 2 * t, b, kvh, split_end),
                             row_facts<kScoreMod>(p, bk, row_group * kRows + 2 * t + 1, b, kvh, split_end)};

    uint4 q_frag[Tr::kQInRegs ? D / 32 : 1][2];
    if (Tr::kQInRegs) {
#pragma unroll
        for (int cc = 0; cc < D / 32; ++cc) {
            q_frag[cc][0] = lds128(smem_q + Tr::offset(g, 4 * cc + t));
            q_frag[cc][1] = lds128(smem_q + Tr::offset(g + 8, 4 * cc + t));
        }
    }

    float acc[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    float row_max[2] = {kNegInf, kNegInf}, row_sum[2] = {0.f, 0.f};

    for (int n = 0; n < my_tiles; ++n) {
        // Tile n + stages - 1 goes into the stage of tile n - 1, issued before the wait for tile
        // n so that `stages` tiles are in flight while the warp waits (issued after it, one
        // fewer: 1-4 % slower on the bench rows, lab/README.md).
        __syncwarp();  // every lane is done with tile n - 1
        {
            const int nn = n + Tr::kStages - 1;
            if (nn < my_tiles) {
                issue_tile(my_ring + (nn % Tr::kStages) * 2 * Tr::kTileElems,
                           split_begin + (warp + nn * kWarps) * kTileKeys);
            }
            cp_async_commit();
        }
        cp_async_wait<Tr::kStages - 1>();
        __syncwarp();  // tile n, copied by every lane, is visible to the warp
#ifdef FATTN_LAB_DECODE_STAMPS
        if (n < kLabTiles) FATTN_LAB_DEC_PHASE(2 + 2 * n);
#endif
        const T* sk = my_ring + (n % Tr::kStages) * 2 * Tr::kTileElems;
        const T* sv = sk + Tr::kTileElems;
        const int key0 = split_begin + (warp + n * kWarps) * kTileKeys;
#if FATTN_DECODE_LAB_NO_MATH == 1
        continue;
#endif
        if (rows8) {
            // Sᵀ = K Qᵀ: st[e] = S[row 2t + (e & 1)][key key0 + g + 8·(e >> 1)]. K's A fragment
            // takes keys g and g + 8 as today's B fragments take them (the same permuted dims);
            // Qᵀ's B fragment is row g's Q fragment.
            float st[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int cc = 0; cc < D / 32; ++cc) {
                const uint4 qa =
                    Tr::kQInRegs ? q_frag[Tr::kQInRegs ? cc : 0][0] : lds128(smem_q + Tr::offset(g, 4 * cc + t));
                const uint4 k_lo = lds128(sk + Tr::offset(g, 4 * cc + t));
                const uint4 k_hi = lds128(sk + Tr::offset(g + 8, 4 * cc + t));
                const uint32_t a_lo[4] = {k_lo.x, k_hi.x, k_lo.y, k_hi.y};
                const uint32_t a_hi[4] = {k_lo.z, k_hi.z, k_lo.w, k_hi.w};
                E::mma(st, a_lo, qa.x, qa.y);
                E::mma(st, a_hi, qa.z, qa.w);
            }
            const bool needs_mask_t = key0 < common_lo || key0 + kTileKeys > common_hi;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int c = e & 1, key = key0 + g + 8 * (e >> 1);
                float x = st[e];
                x = kScoreMod ? fattn::score_scaled_log2(p, x, trf[c].slope, trf[c].diag, key) : x * p.scale_log2;
                if (needs_mask_t && (key < trf[c].lo || key >= trf[c].hi)) x = kNegInf;
                st[e] = x;
            }
            // Online softmax of rows 2t (c = 0) and 2t + 1: a row's 16 keys are on the 8 lanes of
            // one t (two each); the sums stay per lane until the block's end.
            float alpha_c[2];
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                float mx = fmaxf(st[c], st[2 + c]);
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
                const float m_new = fmaxf(row_max[c], mx);
                const float m_ref = max_ref(m_new);
                alpha_c[c] = exp2f(row_max[c] - m_ref);
                row_max[c] = m_new;
                st[c] = exp2f(st[c] - m_ref);
                st[2 + c] = exp2f(st[2 + c] - m_ref);
                row_sum[c] = row_sum[c] * alpha_c[c] + st[c] + st[2 + c];
            }
            if (__any_sync(0xffffffffu, alpha_c[0] != 1.f || alpha_c[1] != 1.f)) {
#pragma unroll
                for (int i = 0; i < D / 16; ++i) {
                    acc[i][0] *= alpha_c[0], acc[i][2] *= alpha_c[0];
                    acc[i][1] *= alpha_c[1], acc[i][3] *= alpha_c[1];
                }
            }
#if FATTN_DECODE_LAB_NO_MATH == 2
            continue;  // the softmax stays: row_max and row_sum reach the output
#endif
            // Pᵀ's keys 0-7 and 8-15 as 8×8 blocks (row g = key, columns 2t, 2t + 1 = rows),
            // transposed: lane (g, t) then holds P[row g][keys 2t, 2t + 1] (and + 8), the B
            // fragment of the transposed PV.
            const uint32_t pb0 = movmatrix_trans(E::pack(st[0], st[1]));
            const uint32_t pb1 = movmatrix_trans(E::pack(st[2], st[3]));
#pragma unroll
            for (int u = 0; u < Tr::kVChunks; ++u) {
                const int chunk = g * Tr::kVChunks + u;
                const uint4 v0 = lds128(sv + Tr::offset(2 * t, chunk));
                const uint4 v1 = lds128(sv + Tr::offset(2 * t + 1, chunk));
                const uint4 v2 = lds128(sv + Tr::offset(2 * t + 8, chunk));
                const uint4 v3 = lds128(sv + Tr::offset(2 * t + 9, chunk));
                const uint32_t w0[4] = {v0.x, v0.y, v0.z, v0.w}, w1[4] = {v1.x, v1.y, v1.z, v1.w};
                const uint32_t w2[4] = {v2.x, v2.y, v2.z, v2.w}, w3[4] = {v3.x, v3.y, v3.z, v3.w};
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const uint32_t va[4] = {__byte_perm(w0[q], w1[q], 0x5410u), __byte_perm(w0[q], w1[q], 0x7632u),
                                            __byte_perm(w2[q], w3[q], 0x5410u), __byte_perm(w2[q], w3[q], 0x7632u)};
                    E::mma(acc[4 * u + q], va, pb0, pb1);
                }
            }
            continue;
        }

        // S = Q Kᵀ: 16 rows × 16 keys (two n8 tiles: keys g and g + 8 of the tile).
        float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int cc = 0; cc < D / 32; ++cc) {
            uint4 qa, qb;
            if (Tr::kQInRegs) {
                qa = q_frag[Tr::kQInRegs ? cc : 0][0];
                qb = q_frag[Tr::kQInRegs ? cc : 0][1];
            } else {
                qa = lds128(smem_q + Tr::offset(g, 4 * cc + t));
                qb = lds128(smem_q + Tr::offset(g + 8, 4 * cc + t));
            }
            const uint32_t a_lo[4] = {qa.x, qb.x, qa.y, qb.y};
            const uint32_t a_hi[4] = {qa.z, qb.z, qa.w, qb.w};
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                const uint4 kb = lds128(sk + Tr::offset(nt * 8 + g, 4 * cc + t));
                E::mma(s[nt], a_lo, kb.x, kb.y);
                E::mma(s[nt], a_hi, kb.z, kb.w);
            }
        }

        // Scores in log2 units; masks only on tiles that straddle a boundary.
        const bool needs_mask = key0 < common_lo || key0 + kTileKeys > common_hi;
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int half = e >> 1;
                const int key = key0 + nt * 8 + 2 * t + (e & 1);
                float x = s[nt][e];
                x = kScoreMod ? fattn::score_scaled_log2(p, x, rf[half].slope, rf[half].diag, key) : x * p.scale_log2;
                if (needs_mask && (key < rf[half].lo || key >= rf[half].hi)) x = kNegInf;
                s[nt][e] = x;
            }
        }

        // Online softmax for rows g (half 0) and g + 8 (half 1); a row lives on 4 lanes.
        float alpha_h[2];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            float mx = fmaxf(fmaxf(s[0][2 * half], s[0][2 * half + 1]), fmaxf(s[1][2 * half], s[1][2 * half + 1]));
            mx = quad_max(mx);
            const float m_new = fmaxf(row_max[half], mx);
            const float m_ref = max_ref(m_new);  // all masked so far: no NaN
            const float alpha = exp2f(row_max[half] - m_ref);
            row_max[half] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                s[nt][2 * half] = exp2f(s[nt][2 * half] - m_ref);
                s[nt][2 * half + 1] = exp2f(s[nt][2 * half + 1] - m_ref);
                sum += s[nt][2 * half] + s[nt][2 * half + 1];
            }
            row_sum[half] = row_sum[half] * alpha + sum;
            alpha_h[half] = alpha;
        }
        // The accumulators are rescaled only when some row's max moved in this tile: x · 1 is
        // x, so skipping the multiplies when every alpha is 1 changes no bit, and against a
        // long cache most tiles move no max (the D/2 multiplies were a quarter of the tile's
        // arithmetic, ncu session 23).
        if (__any_sync(0xffffffffu, alpha_h[0] != 1.f || alpha_h[1] != 1.f)) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
#pragma unroll
                for (int j = 0; j < D / 8; ++j) {
                    acc[j][2 * half] *= alpha_h[half];
                    acc[j][2 * half + 1] *= alpha_h[half];
                }
            }
        }

        // O += P V. P's A fragment is S's accumulator layout; V's B fragment pairs keys
        // (2t, 2t+1) and (2t+8, 2t+9) at dim g·D/8 + j.
#if FATTN_DECODE_LAB_NO_MATH == 2
        continue;  // the softmax stays: row_max and row_sum reach the output
#endif
        const uint32_t pa[4] = {E::pack(s[0][0], s[0][1]), E::pack(s[0][2], s[0][3]), E::pack(s[1][0], s[1][1]),
                                E::pack(s[1][2], s[1][3])};
#pragma unroll
        for (int u = 0; u < Tr::kVChunks; ++u) {
            const int chunk = g * Tr::kVChunks + u;
            const uint4 v0 = lds128(sv + Tr::offset(2 * t, chunk));
            const uint4 v1 = lds128(sv + Tr::offset(2 * t + 1, chunk));
            const uint4 v2 = lds128(sv + Tr::offset(2 * t + 8, chunk));
            const uint4 v3 = lds128(sv + Tr::offset(2 * t + 9, chunk));
            const uint32_t w0[4] = {v0.x, v0.y, v0.z, v0.w}, w1[4] = {v1.x, v1.y, v1.z, v1.w};
            const uint32_t w2[4] = {v2.x, v2.y, v2.z, v2.w}, w3[4] = {v3.x, v3.y, v3.z, v3.w};
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                const uint32_t sel = (e & 1) ? 0x7632u : 0x5410u;
                const uint32_t b0 = __byte_perm(w0[e / 2], w1[e / 2], sel);
                const uint32_t b1 = __byte_perm(w2[e / 2], w3[e / 2], sel);
                E::mma(acc[8 * u + e], pa, b0, b1);
            }
        }
#ifdef FATTN_LAB_DECODE_STAMPS
        // The accumulators are ready when their mma has retired: read one so that the stamp
        // waits for them.
        if (n < kLabTiles) {
            asm volatile("" ::"f"(acc[0][0]), "f"(acc[D / 8 - 1][3]));
            FATTN_LAB_DEC_PHASE(3 + 2 * n);
        }
#endif
    }

    // Merge the 4 warps: each scales its accumulator to the block max and adds into smem.
    // `rows8` blocks (transposed QKᵀ): row_max / row_sum [c] are rows 2t + c, the sums per lane
    // over its keys.
    if (rows8) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            row_sum[c] += __shfl_xor_sync(0xffffffffu, row_sum[c], 4);
            row_sum[c] += __shfl_xor_sync(0xffffffffu, row_sum[c], 8);
            row_sum[c] += __shfl_xor_sync(0xffffffffu, row_sum[c], 16);
        }
    } else {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            row_sum[half] = quad_sum(row_sum[half]);
        }
    }
    if (p.defer_combine == 2) {
        // The combine launch merges every warp's partial (splits × warps of them): each warp
        // stores its own rows, (max, sum) and its accumulator relative to that max, straight
        // from the fragments; no barrier, no shared-memory merge. A warp without keys stores
        // (-inf, 0) and zeros, which the merge weighs 0.
        cp_async_wait<0>();  // no copy into the ring outlives the block
        const long long rows_total = (long long)p.batch * p.seq_q * p.heads;
        if (rows8) {
            // Rows 2t + c, dims g·D/8 + [0, D/8) (acc[0, D/16)); (max, sum) of rows 2t + c from
            // the lanes of g = 0.
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const int row = 2 * t + c, r = row_group * kRows + row;
                if (!bk.seq.has_row(p, r)) continue;
                const int hg = r / p.seq_q, i = r % p.seq_q, h = kvh * p.kv_group + hg;
                const long long slot =
                    (long long)(split * kWarps + warp) * rows_total + ((long long)b * p.seq_q + i) * p.heads + h;
                float* dst = p.partial_o + slot * D + g * (D / 8);
#pragma unroll
                for (int m = 0; m < D / 32; ++m)
                    *reinterpret_cast<float4*>(dst + 4 * m) =
                        make_float4(acc[2 * m][c], acc[2 * m][2 + c], acc[2 * m + 1][c], acc[2 * m + 1][2 + c]);
            }
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const int r = row_group * kRows + 2 * t + c;
                if (g != 0 || !bk.seq.has_row(p, r)) continue;
                const int hg = r / p.seq_q, i = r % p.seq_q, h = kvh * p.kv_group + hg;
                const long long slot =
                    (long long)(split * kWarps + warp) * rows_total + ((long long)b * p.seq_q + i) * p.heads + h;
                reinterpret_cast<float2*>(p.partial_ml)[slot] = make_float2(row_max[c], row_sum[c]);
            }
            FATTN_LAB_DEC_PHASE(18);
            return;
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = g + 8 * half, r = row_group * kRows + row;
            if (!bk.seq.has_row(p, r)) continue;
            const int hg = r / p.seq_q, i = r % p.seq_q, h = kvh * p.kv_group + hg;
            const long long slot =
                (long long)(split * kWarps + warp) * rows_total + ((long long)b * p.seq_q + i) * p.heads + h;
            float* dst = p.partial_o + slot * D;
#pragma unroll
            for (int col = 0; col < 2; ++col) {
#pragma unroll
                for (int j = 0; j < D / 8; j += 4)
                    *reinterpret_cast<float4*>(dst + (2 * t + col) * (D / 8) + j) =
                        make_float4(acc[j][2 * half + col], acc[j + 1][2 * half + col], acc[j + 2][2 * half + col],
                                    acc[j + 3][2 * half + col]);
            }
            if (t == 0) reinterpret_cast<float2*>(p.partial_ml)[slot] = make_float2(row_max[half], row_sum[half]);
        }
        FATTN_LAB_DEC_PHASE(18);
        return;
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with its ring: it becomes the merge buffer
    __shared__ float merge_ml[kWarps][kRows][2];
    __shared__ float block_ml[kRows][2];
    if (rows8) {
        // Rows 2t + c from the lanes of g = 0; the padding rows 8 + 2t + c empty, from g = 1.
        if (g < 2) {
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                merge_ml[warp][8 * g + 2 * t + c][0] = g == 0 ? row_max[c] : kNegInf;
                merge_ml[warp][8 * g + 2 * t + c][1] = g == 0 ? row_sum[c] : 0.f;
            }
        }
    } else if (t == 0) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            merge_ml[warp][g + 8 * half][0] = row_max[half];
            merge_ml[warp][g + 8 * half][1] = row_sum[half];
        }
    }
    merge_row_stats(merge_ml, block_ml);
    float* merge_o = reinterpret_cast<float*>(smem_kv);  // [warps][rows][D]
    if (rows8) {
        // Rows 2t + c of this warp, dims g·D/8 + [0, D/8); the row's max is merge_ml's (the
        // lanes of g = 0 stored it). Rows 8-15 stay unwritten: store_block_rows reads valid rows only.
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int row = 2 * t + c;
            const float factor = exp2f(merge_ml[warp][row][0] - max_ref(block_ml[row][0]));
#pragma unroll
            for (int m = 0; m < D / 32; ++m) {
                const float4 w4 = make_float4(acc[2 * m][c] * factor, acc[2 * m][2 + c] * factor,
                                              acc[2 * m + 1][c] * factor, acc[2 * m + 1][2 + c] * factor);
                *reinterpret_cast<float4*>(merge_o + merge_index<D>(warp * kRows + row, g * (D / 8) + 4 * m)) = w4;
            }
        }
    } else {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = g + 8 * half;
            const float factor = exp2f(row_max[half] - max_ref(block_ml[row][0]));
#pragma unroll
            for (int col = 0; col < 2; ++col) {
#pragma unroll
                for (int j = 0; j < D / 8; j += 4) {
                    float4 w4 = make_float4(acc[j][2 * half + col] * factor, acc[j + 1][2 * half + col] * factor,
                                            acc[j + 2][2 * half + col] * factor, acc[j + 3][2 * half + col] * factor);
                    *reinterpret_cast<float4*>(merge_o + merge_index<D>(warp * kRows + row, (2 * t + col) * (D / 8) + j)) =
                        w4;
                }
            }
        }
    }
    __syncthreads();
    store_block_rows<T, D, kPacked>(p, merge_o, block_ml, bk.seq, b, kvh, row_group, split);
    FATTN_LAB_DEC_PHASE(19);
}

// f32: the same blocks, splits and merge on CUDA cores (no TF32, so the error stays at the
// level of f32 matmul). Each warp stages its 16-key tile of K and V in shared memory (rows
// padded by 4 floats against bank conflicts); lane (kk, rh) computes the scores of key kk for
// rows rh·8 .. rh·8+7; for PV lane l owns dims l, l+32, ... of all 16 rows.
template <int D>
struct TraitsF32 {
    static_assert(D == 64 || D == 128 || D == 256, "instantiated head dims: 64, 128, 256");
    static constexpr int kRowStride = D + 4;
    static constexpr int kTileFloats = kTileKeys * kRowStride;
    static constexpr int kSmemFloats = kRows * D + kWarps * 2 * kTileFloats + kWarps * kRows * kTileKeys;
    static_assert(kWarps * kRows * D <= kWarps * 2 * kTileFloats, "merge buffer fits in the K/V tiles");
};

// Copies 4 floats (the first `valid` of them exist) from global to shared memory.
__device__ __forceinline__ void load4_f32(float* dst, const float* src, int valid, bool aligned) {
    if (aligned && valid == 4) {
        *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
    } else {
#pragma unroll
        for (int x = 0; x < 4; ++x) dst[x] = x < valid ? src[x] : 0.f;
    }
}

template <int D, bool kScoreMod, bool kPacked>
__device__ __forceinline__ void decode_block_f32(const FattnParams& p) {
    using Tr = TraitsF32<D>;
    extern __shared__ __align__(kSmemAlign) unsigned char smem_raw[];
    float* smem_q = reinterpret_cast<float*>(smem_raw);  // [rows][D]
    float* smem_kv = smem_q + kRows * D;                  // per warp: K then V tile
    float* smem_p = smem_kv + kWarps * 2 * Tr::kTileFloats; // per warp: [rows][keys]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int split = blockIdx.x;
    const int kvh = blockIdx.y / p.row_groups, row_group = blockIdx.y % p.row_groups;
    const int b = blockIdx.z;
    const BlockKeys bk = block_keys<kPacked>(p, b);
    const int split_begin = bk.key_begin + split * p.keys_per_split;
    const int split_end = min(split_begin + p.keys_per_split, bk.key_end);
    const int n_tiles = split_end > split_begin ? (split_end - split_begin + kTileKeys - 1) / kTileKeys : 0;
    const bool aligned = p.vec_in;

    const float* q_base = static_cast<const float*>(p.q) + b * p.q_batch_stride + bk.seq.q0 * p.q_seq_stride;
    const int32_t* table = kPacked ? fattn::block_table_row(p, b) : nullptr;
    const float* k_head = kPacked ? static_cast<const float*>(p.k) + kvh * p.k_head_stride
                                  : fattn::k_head_rows<float>(p, b, kvh);
    const float* v_head = kPacked ? static_cast<const float*>(p.v) + kvh * p.v_head_stride
                                  : fattn::v_head_rows<float>(p, b, kvh);
    // Key `key` of the sequence in k and v.
    auto k_row = [&](int key) {
        return kPacked ? fattn::kv_key_row(p, k_head, p.k_batch_stride, p.k_seq_stride, table, bk.k0, key)
                       : k_head + key * p.k_seq_stride;
    };
    auto v_row = [&](int key) {
        return kPacked ? fattn::kv_key_row(p, v_head, p.v_batch_stride, p.v_seq_stride, table, bk.k0, key)
                       : v_head + key * p.v_seq_stride;
    };
    for (int idx = tid; idx < kRows * D / 4; idx += kThreads) {
        const int row = idx / (D / 4), c = idx % (D / 4);
        const int r = row_group * kRows + row;
        int valid = 0;
        const float* src = q_base;
        if (bk.seq.has_row(p, r)) {
            const int hg = r / p.seq_q, i = r % p.seq_q;
            valid = min(max(p.head_dim - c * 4, 0), 4);
            src = q_base + i * p.q_seq_stride + (kvh * p.kv_group + hg) * p.q_head_stride + c * 4;
        }
        load4_f32(smem_q + row * D + c * 4, src, valid, aligned);
    }
    __syncthreads();

    const int kk = lane % kTileKeys, rh = lane / kTileKeys;  // score lane: key kk, rows rh·8..
    RowFacts rf[8];
    float row_max[8], row_sum[8];
#pragma unroll
    for (int x = 0; x < 8; ++x) {
        rf[x] = row_facts<kScoreMod>(p, bk, row_group * kRows + rh * 8 + x, b, kvh, split_end);
        row_max[x] = kNegInf;
        row_sum[x] = 0.f;
    }
    float acc[kRows][D / 32];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int x = 0; x < D / 32; ++x) acc[r][x] = 0.f;

    float* sk = smem_kv + warp * 2 * Tr::kTileFloats;
    float* sv = sk + Tr::kTileFloats;
    float* sp = smem_p + warp * kRows * kTileKeys;  // P, then the per-row rescale factors
    for (int tile = warp; tile < n_tiles; tile += kWarps) {
        const int key0 = split_begin + tile * kTileKeys;
        __syncwarp();  // the previous tile's reads are done
        for (int idx = lane; idx < kTileKeys * D / 4; idx += 32) {
            const int row = idx / (D / 4), c = idx % (D / 4);
            const int key = key0 + row;
            const int valid = key < split_end ? min(max(p.head_dim - c * 4, 0), 4) : 0;
            load4_f32(sk + row * Tr::kRowStride + c * 4, valid ? k_row(key) + c * 4 : k_head, valid, aligned);
            load4_f32(sv + row * Tr::kRowStride + c * 4, valid ? v_row(key) + c * 4 : v_head, valid, aligned);
        }
        __syncwarp();

        float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
        for (int c = 0; c < D / 4; ++c) {
            const float4 k4 = *reinterpret_cast<const float4*>(sk + kk * Tr::kRowStride + c * 4);
#pragma unroll
            for (int x = 0; x < 8; ++x) {
                const float4 q4 = *reinterpret_cast<const float4*>(smem_q + (rh * 8 + x) * D + c * 4);
                s[x] = fmaf(q4.x, k4.x, fmaf(q4.y, k4.y, fmaf(q4.z, k4.z, fmaf(q4.w, k4.w, s[x]))));
            }
        }
        const int key = key0 + kk;
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            float v = s[x];
            v = kScoreMod ? fattn::score_scaled_log2(p, v, rf[x].slope, rf[x].diag, key) : v * p.scale_log2;
            if (key < rf[x].lo || key >= rf[x].hi) v = kNegInf;
            // The 16 lanes of a half-warp hold one row's 16 keys.
            float mx = v;
#pragma unroll
            for (int o = 1; o < kTileKeys; o *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float m_new = fmaxf(row_max[x], mx);
            const float alpha = exp2f(row_max[x] - max_ref(m_new));
            row_max[x] = m_new;
            const float pv = exp2f(v - max_ref(m_new));
            float sum = pv;
#pragma unroll
            for (int o = 1; o < kTileKeys; o *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            row_sum[x] = row_sum[x] * alpha + sum;
            sp[(rh * 8 + x) * kTileKeys + kk] = pv;
            s[x] = alpha;
        }
        // Rescale factors of rows rh·8.. come from lane rh·16: broadcast them to all lanes.
        float alpha_all[kRows];
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            alpha_all[x] = __shfl_sync(0xffffffffu, s[x], 0);
            alpha_all[8 + x] = __shfl_sync(0xffffffffu, s[x], 16);
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int x = 0; x < D / 32; ++x) acc[r][x] *= alpha_all[r];
#pragma unroll 4
        for (int j = 0; j < kTileKeys; ++j) {
            float vv[D / 32];
#pragma unroll
            for (int x = 0; x < D / 32; ++x) vv[x] = sv[j * Tr::kRowStride + lane + 32 * x];
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                const float pr = sp[r * kTileKeys + j];
#pragma unroll
                for (int x = 0; x < D / 32; ++x) acc[r][x] = fmaf(pr, vv[x], acc[r][x]);
            }
        }
    }

    __syncthreads();  // every warp is done with its tiles: they become the merge buffer
    __shared__ float merge_ml[kWarps][kRows][2];
    __shared__ float block_ml[kRows][2];
    if (kk == 0) {
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            merge_ml[warp][rh * 8 + x][0] = row_max[x];
            merge_ml[warp][rh * 8 + x][1] = row_sum[x];
        }
    }
    merge_row_stats(merge_ml, block_ml);
    float* merge_o = smem_kv;  // [warps][rows][D]
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        // Every lane holds the max of row r: rows rh·8.. in lanes rh·16...
        const float m_warp = __shfl_sync(0xffffffffu, row_max[r % 8], r < 8 ? 0 : 16);
        const float factor = exp2f(m_warp - max_ref(block_ml[r][0]));
#pragma unroll
        for (int x = 0; x < D / 32; ++x) merge_o[merge_index<D>(warp * kRows + r, lane + 32 * x)] = acc[r][x] * factor;
    }
    __syncthreads();
    store_block_rows<float, D, kPacked>(p, merge_o, block_ml, bk.seq, b, kvh, row_group, split);
}

}  // namespace fattn_decode

// ---- entry points ------------------------------------------------------------------------
//
// The instances are declared once, in src/cuda/instances.rs. build.rs expands
// FATTN_INSTANCE_DECODE once per instance of this file (the generated list
// FATTN_INSTANCES_DECODE_SM80) into its extern "C" kernel, and checks that the numbers the
// crate launches it with are what the traits compute. VARIANT: 0 plain, 1 softcap/ALiBi
// (`_mod`). Each instance has a dense entry NAME and a packed one NAME_varlen.

#define FATTN_INSTANCE_DECODE(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM) \
    FATTN_DECODE_ENTRY_##DTYPE(NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM)
#define FATTN_DECODE_ENTRY_BF16(...) FATTN_DECODE_ENTRY_16(__nv_bfloat16, __VA_ARGS__)
#define FATTN_DECODE_ENTRY_F16(...) FATTN_DECODE_ENTRY_16(__half, __VA_ARGS__)

#define FATTN_DECODE_CHECK_GEOMETRY(NAME, VARIANT, THREADS, ROWS, KEYS)                                     \
    static_assert(VARIANT == 0 || VARIANT == 1, #NAME ": a decode instance is plain or _mod");              \
    static_assert(fattn_decode::kThreads == THREADS, #NAME ": threads differ from src/cuda/instances.rs"); \
    static_assert(fattn_decode::kRows == ROWS, #NAME ": block rows differ from src/cuda/instances.rs");    \
    static_assert(fattn_decode::kWarps * fattn_decode::kTileKeys == KEYS,                                 \
                  #NAME ": keys per round differ from src/cuda/instances.rs");

#define FATTN_DECODE_ENTRY_16(T, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                   \
    FATTN_DECODE_CHECK_GEOMETRY(NAME, VARIANT, THREADS, ROWS, KEYS)                                             \
    static_assert(fattn_decode::Traits<D>::kSmemElems * 2 == SMEM,                                            \
                  #NAME ": smem bytes differ from src/cuda/instances.rs");                                    \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME(const FattnParams p) {          \
        fattn_decode::decode_block<T, D, VARIANT == 1, false>(p);                                                  \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME##_varlen(const FattnParams p) { \
        fattn_decode::decode_block<T, D, VARIANT == 1, true>(p);                                                   \
    }

#define FATTN_DECODE_ENTRY_F32(NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                     \
    FATTN_DECODE_CHECK_GEOMETRY(NAME, VARIANT, THREADS, ROWS, KEYS)                                             \
    static_assert(fattn_decode::TraitsF32<D>::kSmemFloats * 4 == SMEM,                                        \
                  #NAME ": smem bytes differ from src/cuda/instances.rs");                                    \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME(const FattnParams p) {          \
        fattn_decode::decode_block_f32<D, VARIANT == 1, false>(p);                                                  \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) NAME##_varlen(const FattnParams p) { \
        fattn_decode::decode_block_f32<D, VARIANT == 1, true>(p);                                                   \
    }
