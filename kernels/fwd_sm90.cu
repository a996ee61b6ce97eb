// Attention forward for Hopper (sm_90a): wgmma, TMA and warp specialization.
//
// What it computes: exactly what kernels/fwd_sm80.cu computes for dense f16/bf16 problems
// (o = softmax(s) v per (batch, q head, query row), s the scaled dot products after softcap,
// ALiBi and the bottom-right causal/window masks of common/mask.cuh; softmax in f32 in log2
// units, f32 accumulation; rows that see no key output zeros; the LSE when asked), on the
// Hopper tensor cores.
//
// One CTA owns kBlockM = 128 query rows of one (batch, head), in three warpgroups:
// * warpgroup 0, the producer, gives its registers away (setmaxnreg) and one of its threads
//   issues every copy: the Q tile once, then K and V tiles of kBlockN keys through a
//   kStages-deep ring, each a TMA box of 64 columns per 128-byte-swizzled panel, completing
//   on "full" mbarriers; it refills a stage when both consumers have arrived on its "empty"
//   mbarrier.
// * warpgroups 1 and 2, the consumers, own 64 rows each: S = Q·Kᵀ as wgmma with both
//   operands in shared memory (m64 n=kBlockN k16), the online softmax in registers, then
//   O += P·V as wgmma with P from registers (the S accumulator is the A fragment layout, as
//   in FlashAttention-2) and V from shared memory (MN-major descriptor, no transpose copy).
// * Epilogue: each consumer normalizes its rows, stages them in its (dead) part of the Q tile
//   in the same swizzle and stores 16 bytes per thread.
//
// Tensor maps are made on the host from the real strides (src/cuda/prefill_sm90.rs); rows past
// the sequence and columns past the head dim arrive as zeros, so any seq_q, seq_k and any head
// dim that is a multiple of 8 up to the instance's runs without a separate tail path. Problems
// TMA cannot describe (unaligned strides), packed batches, f32 and other head dims run on the
// sm_80 kernel.
//
// Version 1 (this file): no ping-pong between the consumers and no overlap of the softmax with
// the next block's GEMM inside a warpgroup; each consumer waits for its own GEMMs. Measured:
// not yet (lab/README.md, session 7).

#include "common/grid.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"
#include "common/softmax.cuh"
#include "common/wgmma.cuh"

namespace fattn {
namespace hopper {

// ---- tile traits --------------------------------------------------------------------------

template <int kHeadDim_, int kBlockN_, int kStages_>
struct HopperConfig {
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kStages = kStages_;
    // Consumer warpgroups, 64 query rows each (one wgmma m64 row block).
    static constexpr int kConsumers = 2;
    static constexpr int kBlockM = 64 * kConsumers;
    static constexpr int kThreads = 128 * (kConsumers + 1);
    // Head-dim panels of 64 columns: the width of the 128-byte swizzle, one TMA box each.
    static constexpr int kPanels = kHeadDim / 64;
    static constexpr int kQBytes = kBlockM * kHeadDim * 2;
    static constexpr int kKVBytes = kBlockN * kHeadDim * 2;  // one K or one V tile
    // Q; K and V full/empty per stage.
    static constexpr int kBarriers = 1 + 4 * kStages;
    // 1 KiB of slack aligns the tiles to the swizzle atom; the barriers follow the tiles.
    static constexpr int kSmemBytes = 1024 + kQBytes + 2 * kStages * kKVBytes + kBarriers * 8;
    // setmaxnreg budgets: the producer needs a few registers, the consumers O, S and P.
    static constexpr int kProducerRegs = 24;
    static constexpr int kConsumerRegs = 240;

    static_assert(kHeadDim % 64 == 0, "the head dim is whole 64-column panels");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "a wgmma n of 16..256 in steps of 16");
    static_assert(kBlockN % 8 == 0 && kBlockM % 8 == 0, "tiles are whole 8-row swizzle atoms");
    static_assert(kStages >= 2, "the ring needs two stages to overlap loads with compute");
    static_assert((kQBytes % 1024) == 0 && (kKVBytes % 1024) == 0, "every tile starts on a 1 KiB atom");
    static_assert(kBlockN * 128 < (1 << 18), "V's panel stride fits the descriptor's leading byte offset");
    static_assert(kSmemBytes <= 227 * 1024, "tile does not fit the 227 KiB an H100 block may opt into");
    static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file");
    static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
};

// Per head-dim instance. Consumer registers per thread: O (kHeadDim/2) + S (kBlockN/2) + P
// (kBlockN/4) + addressing. Unsupported head dims have no specialization.
template <int kHeadDim>
struct HopperTraits;
template <>
struct HopperTraits<64> : HopperConfig<64, 128, 3> {};
template <>
struct HopperTraits<128> : HopperConfig<128, 128, 2> {};

// ---- the kernel ---------------------------------------------------------------------------

template <class Cfg, class E, bool kMods>
__device__ __forceinline__ void fwd_hopper(const FattnHopperParams& hp) {
    constexpr int D = Cfg::kHeadDim, BN = Cfg::kBlockN, BM = Cfg::kBlockM, ST = Cfg::kStages;
    const FattnParams& p = hp.fwd;
    const float kNegInf = -CUDART_INF_F;

    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    uint8_t* const smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    uint8_t* const sQ = smem;
    uint8_t* const sK = sQ + Cfg::kQBytes;  // stage s at + s · kKVBytes
    uint8_t* const sV = sK + ST * Cfg::kKVBytes;
    uint64_t* const bar_q = reinterpret_cast<uint64_t*>(sV + ST * Cfg::kKVBytes);
    uint64_t* const full_k = bar_q + 1;
    uint64_t* const full_v = full_k + ST;
    uint64_t* const empty_k = full_v + ST;
    uint64_t* const empty_v = empty_k + ST;

    const QueryBlock qb = query_block(p, BM);
    const int m_last = min(qb.m0 + BM, p.seq_q) - 1;
    const KeyRange keys = block_key_range(p, qb.m0, m_last);
    const int nb_begin = keys.lo / BN;
    const int nb_end = keys.hi > keys.lo ? (keys.hi + BN - 1) / BN : nb_begin;

    if (threadIdx.x == 0) {
        sm90::mbar_init(bar_q, 1);
#pragma unroll
        for (int s = 0; s < ST; ++s) {
            sm90::mbar_init(&full_k[s], 1);
            sm90::mbar_init(&full_v[s], 1);
            // Every consumer warp arrives once it is done with the stage.
            sm90::mbar_init(&empty_k[s], Cfg::kConsumers * 4);
            sm90::mbar_init(&empty_v[s], Cfg::kConsumers * 4);
        }
        sm90::fence_barrier_init();
    }
    __syncthreads();

    const int warp_group = threadIdx.x / 128;
    if (warp_group == 0) {
        // ---- producer ----
        sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
        if (threadIdx.x == 0 && nb_begin < nb_end) {
            sm90::prefetch_tma_desc(&hp.tma_q);
            sm90::prefetch_tma_desc(&hp.tma_k);
            sm90::prefetch_tma_desc(&hp.tma_v);
            const int kvh = qb.head / p.kv_group;
            sm90::mbar_arrive_expect_tx(bar_q, Cfg::kQBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kPanels; ++c)
                sm90::tma_load_4d(sQ + c * BM * 128, &hp.tma_q, bar_q, c * 64, qb.m0, qb.head, qb.batch);
            for (int nb = nb_begin; nb < nb_end; ++nb) {
                const int it = nb - nb_begin, st = it % ST;
                const uint32_t phase = (it / ST) & 1;
                // A stage is free again once the consumers released its previous use.
                if (it >= ST) sm90::mbar_wait(&empty_k[st], phase ^ 1);
                sm90::mbar_arrive_expect_tx(&full_k[st], Cfg::kKVBytes);
#pragma unroll
                for (int c = 0; c < Cfg::kPanels; ++c)
                    sm90::tma_load_4d(sK + st * Cfg::kKVBytes + c * BN * 128, &hp.tma_k, &full_k[st], c * 64, nb * BN,
                                      kvh, qb.batch);
                if (it >= ST) sm90::mbar_wait(&empty_v[st], phase ^ 1);
                sm90::mbar_arrive_expect_tx(&full_v[st], Cfg::kKVBytes);
#pragma unroll
                for (int c = 0; c < Cfg::kPanels; ++c)
                    sm90::tma_load_4d(sV + st * Cfg::kKVBytes + c * BN * 128, &hp.tma_v, &full_v[st], c * 64, nb * BN,
                                      kvh, qb.batch);
            }
        }
        return;
    }

    // ---- consumers ----
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cw = warp_group - 1;
    const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    // This warp's 16 rows and this thread's two of them (row0, row0 + 8).
    const int warp_row0 = qb.m0 + cw * 64 + warp * 16;
    const int row0 = warp_row0 + g;

    float alibi_log2 = 0.f;
    if (kMods && p.alibi_slopes != nullptr) alibi_log2 = p.alibi_slopes[qb.batch * p.heads + qb.head] * CUDART_L2E_F;
    const float exp_scale = kMods ? 1.f : p.scale_log2;

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float row_max[2] = {kNegInf, kNegInf};
    float row_sum[2] = {0.f, 0.f};  // this thread's partial sums; the quad reduces them at the end

    // This warpgroup's 64 rows in Q's first panel; panel c is BM · 128 bytes further.
    const uint32_t q_tile = smem_addr(sQ) + cw * 64 * 128;
    if (nb_begin < nb_end) sm90::mbar_wait(bar_q, 0);

    for (int nb = nb_begin; nb < nb_end; ++nb) {
        const int it = nb - nb_begin, st = it % ST;
        const uint32_t phase = (it / ST) & 1;
        const int n0 = nb * BN;

        // S = Q Kᵀ: D/16 k-steps; a step is 32 bytes into the 128-byte rows of a panel.
        float s[BN / 2];
        sm90::mbar_wait(&full_k[st], phase);
        const uint32_t k_tile = smem_addr(sK) + st * Cfg::kKVBytes;
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint64_t a = sm90::desc_sw128(q_tile + (kk / 4) * BM * 128 + (kk % 4) * 32, 16, 1024);
            const uint64_t b = sm90::desc_sw128(k_tile + (kk / 4) * BN * 128 + (kk % 4) * 32, 16, 1024);
            sm90::Wgmma<E, BN>::ss(s, a, b, kk > 0 ? 1 : 0);
        }
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_regs(s);
        __syncwarp();
        if (lane == 0) sm90::mbar_arrive(&empty_k[st]);

        // Scores: `_mods` instances turn the dot products into log2-unit scores; the plain
        // ones keep raw dot products and fold the (positive) scale into exp2. Mask arithmetic
        // only on blocks that some row of this warp sees partially.
        if constexpr (kMods) {
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    s[4 * j + e] = score_log2(p, s[4 * j + e], alibi_log2, row0 + (e / 2) * 8, n0 + 8 * j + 2 * t + e % 2);
        }
        if (!block_fully_visible(p, warp_row0, warp_row0 + 15, n0, n0 + BN)) {
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const KeyRange rk = key_range(p, row0 + hf * 8);
#pragma unroll
                for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (!rk.contains(n0 + 8 * j + 2 * t + e)) s[4 * j + 2 * hf + e] = kNegInf;
            }
        }

        // Online softmax: new row max, rescale factor, P = exp2(scale·(x - max)) in place.
        float corr[2];
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            float mx = row_max[hf];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * hf], s[4 * j + 2 * hf + 1]));
            mx = quad_max(mx);
            // A row with nothing visible yet keeps max -inf; subtract 0 so exp2 gives 0, not NaN.
            const float base = mx == kNegInf ? 0.f : mx * exp_scale;
            corr[hf] = exp2_approx(fmaf(row_max[hf], exp_scale, -base));
            row_max[hf] = mx;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                s[4 * j + 2 * hf] = exp2_approx(fmaf(s[4 * j + 2 * hf], exp_scale, -base));
                s[4 * j + 2 * hf + 1] = exp2_approx(fmaf(s[4 * j + 2 * hf + 1], exp_scale, -base));
                sum += s[4 * j + 2 * hf] + s[4 * j + 2 * hf + 1];
            }
            row_sum[hf] = row_sum[hf] * corr[hf] + sum;
        }
        // P as wgmma A fragments: key block pair (2kk, 2kk + 1) is k-step kk.
        uint32_t pf[BN / 16][4];
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            pf[kk][0] = E::pack(s[8 * kk + 0], s[8 * kk + 1]);
            pf[kk][1] = E::pack(s[8 * kk + 2], s[8 * kk + 3]);
            pf[kk][2] = E::pack(s[8 * kk + 4], s[8 * kk + 5]);
            pf[kk][3] = E::pack(s[8 * kk + 6], s[8 * kk + 7]);
        }
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
            o[4 * j + 0] *= corr[0];
            o[4 * j + 1] *= corr[0];
            o[4 * j + 2] *= corr[1];
            o[4 * j + 3] *= corr[1];
        }

        // O += P V: BN/16 k-steps of 16 keys (2048 bytes of V's panels each); V is MN-major:
        // 8-key atoms 1024 bytes apart (sbo), 64-column panels BN · 128 bytes apart (lbo).
        sm90::mbar_wait(&full_v[st], phase);
        const uint32_t v_tile = smem_addr(sV) + st * Cfg::kKVBytes;
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            const uint64_t b = sm90::desc_sw128(v_tile + kk * 16 * 128, BN * 128, 1024);
            sm90::Wgmma<E, D>::rs(o, pf[kk], b, 1);
        }
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_regs(o);
        __syncwarp();
        if (lane == 0) sm90::mbar_arrive(&empty_v[st]);
    }

    // ---- epilogue: normalize, stage in this warpgroup's rows of the Q tile, 16-byte stores.
    // The barrier orders every warp's last wgmma read of Q before the writes.
    sm90::named_barrier_sync(1 + cw, 128);
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
        const float l = quad_sum(row_sum[hf]);
        const float inv = inv_row_sum(l);
        const int row = row0 + hf * 8;
        if (p.lse != nullptr && t == 0 && row < p.seq_q)
            *lse_slot(p, qb.batch, qb.head, row) = row_lse(row_max[hf] * exp_scale, l);
        const int r = cw * 64 + warp * 16 + g + hf * 8;  // row within the tile
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
            const uint32_t packed = E::pack(o[4 * j + 2 * hf] * inv, o[4 * j + 2 * hf + 1] * inv);
            uint8_t* dst = sQ + (j / 8) * BM * 128 + r * 128 + (((j % 8) ^ (r % 8)) * 16) + t * 4;
            *reinterpret_cast<uint32_t*>(dst) = packed;
        }
    }
    sm90::named_barrier_sync(1 + cw, 128);
    uint16_t* og = static_cast<uint16_t*>(p.o) + qb.batch * p.o_batch_stride + qb.head * p.o_head_stride;
    constexpr int kChunks = D / 8;  // 16-byte chunks of a row
#pragma unroll
    for (int i = 0; i < 64 * kChunks / 128; ++i) {
        const int chunk = tid + i * 128;
        const int r = cw * 64 + chunk / kChunks, c = chunk % kChunks;
        const int row = qb.m0 + r;
        if (row >= p.seq_q || c * 8 >= p.head_dim) continue;
        const uint4 val = *reinterpret_cast<const uint4*>(sQ + (c / 8) * BM * 128 + r * 128 + (((c % 8) ^ (r % 8)) * 16));
        *reinterpret_cast<uint4*>(og + static_cast<int64_t>(row) * p.o_seq_stride + c * 8) = val;
    }
}

}  // namespace hopper
}  // namespace fattn

// ---- entry points ------------------------------------------------------------------------
//
// Declared once in src/cuda/instances.rs (Arch::Sm90a); build.rs expands FATTN_INSTANCE_FWD
// per instance of this file and checks the launch numbers against the traits. VARIANT: 0
// plain, 1 softcap/ALiBi (`_mods`). Dense problems only (no `_varlen` entry yet).

#define FATTN_INSTANCE_FWD(DTYPE, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                         \
    static_assert(VARIANT == 0 || VARIANT == 1, #NAME ": a Hopper instance is plain or _mods");                        \
    static_assert(fattn::hopper::HopperTraits<D>::kHeadDim == D, #NAME ": head dim");                                  \
    static_assert(fattn::hopper::HopperTraits<D>::kThreads == THREADS, #NAME ": threads differ from instances.rs");    \
    static_assert(fattn::hopper::HopperTraits<D>::kBlockM == ROWS, #NAME ": block rows differ from instances.rs");     \
    static_assert(fattn::hopper::HopperTraits<D>::kBlockN == KEYS, #NAME ": key block differs from instances.rs");     \
    static_assert(fattn::hopper::HopperTraits<D>::kSmemBytes == SMEM, #NAME ": smem bytes differ from instances.rs"); \
    extern "C" __global__ void __launch_bounds__(fattn::hopper::HopperTraits<D>::kThreads, 1)                          \
        NAME(const __grid_constant__ FattnHopperParams p) {                                                            \
        fattn::hopper::fwd_hopper<fattn::hopper::HopperTraits<D>, fattn::DTYPE, VARIANT == 1>(p);                      \
    }
