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
// Session 23 (H200, lab/results/s23-call1..3): ncu had this launch at 10.1k cycles against
// cuDNN's reduction at 5.8k, 1 080 instructions a warp, three quarters of its 16-slot batches
// predicated off and the index math (three runtime divisions) all after the wait. Per-warp
// partials now merge in batches of 4 (324k instructions, 9.4k cycles), and the wait sits right
// before the first partial load (`merge_split_partials` kWaitGrid): (1,32,8,1,2048) 14.8 → 14.2
// → 13.8 µs in same-call A/Bs against cuDNN's 13.4 (with 8 splits since 6efdbf9: 13.5).

#include "decode_sm80.cu"

namespace fattn_decode {

template <typename T, int D, bool kPacked>
__device__ __forceinline__ void combine_block(const FattnParams& p) {
    const int kvh = blockIdx.y / p.row_groups, row_group = blockIdx.y % p.row_groups;
    const int b = blockIdx.z;
    // The sequence's bounds come from the launch's index tensors, written before the split
    // kernel started: readable before the wait.
    const BlockSeq sq = block_keys<kPacked>(p, b).seq;
#ifdef FATTN_LAB_DECODE_STAMPS
    if (threadIdx.x == 0) {
        lab_comb_t0 = lab_now();
        lab_comb_launch = kPacked ? ~0u : lab_enter(&g_lab_comb_blocks, g_lab_comb_entry, g_lab_comb_smid, lab_comb_t0);
    }
    __syncthreads();
#endif
    // The wait for the split grid is inside, right before the first partial load, so that
    // the block's index and address arithmetic runs before the split kernel has ended. A
    // block with no round exits without waiting (it reads and writes nothing).
    if (p.defer_combine == 2) {
        merge_split_partials<T, D, kPacked, 4, true>(p, sq, b, kvh, row_group, blockIdx.x, gridDim.x);
    } else {
        merge_split_partials<T, D, kPacked, 16, true>(p, sq, b, kvh, row_group, blockIdx.x, gridDim.x);
    }
#ifdef FATTN_LAB_DECODE_STAMPS
    __syncthreads();
    FATTN_LAB_COMB_PHASE(1);
#endif
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
