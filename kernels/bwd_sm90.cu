// Attention backward for Hopper (sm_90a): wgmma and TMA, the main kernel only.
//
// What it computes: exactly what the tensor-core main kernel of kernels/bwd_sm80.cu computes
// for dense f16/bf16 problems (its header has the formulas): per (batch, kv head, block of
// 128 keys), for every q head of the kv head's group (or of its split) and every query block
// that sees a key of the block, P = exp2(S·scale·log2 e - lse·log2 e) recomputed from Q, K and
// the forward's LSE, dS = P∘(dP - D) [· (1 - tanh²) under a softcap], dV += Pᵀ dO,
// dK += dSᵀ Q held in registers, dQ += dS K added with f32 atomics into the (batch, head,
// padded row, d) accumulator. The preprocess (D, lse·log2 e) and convert kernels of
// kernels/bwd_sm80.cu run before and after it, unchanged (src/cuda/backward.rs).
//
// Layout (HopperBwdConfig): 2 consumer warpgroups, 64 keys each, and a producer warpgroup that
// gives its registers to them (setmaxnreg): 384 threads.
// * The producer's first thread loads K and V of the block once (TMA boxes of 64 columns
//   × 128 keys per 128-byte-swizzled panel), then per item Q and dO (boxes of kBlockM rows)
//   and the rows' lse·log2 e and D (bulk copies) through a kStages ring of full/empty
//   mbarriers.
// * Each consumer warpgroup computes, with its 64 keys as the wgmma M dimension (the swapped
//   form, so that Pᵀ and dSᵀ land in registers in the A-fragment layout):
//     Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (both operands in shared memory, K-major),
//     Pᵀ, dSᵀ in registers (masks only on blocks some row of the warp sees partially),
//     dV += Pᵀ dO and dK += dSᵀ Q (A from registers, B = dO/Q MN-major from the same tiles),
//     dS → shared memory as [query][key] (stmatrix.trans, double-buffered), a named barrier
//     between the two warpgroups, then dQ = dS K (A K-major, B = K MN-major): at kBlockM 128
//     (d64) each warpgroup takes 64 query rows, at kBlockM 64 (d128) half the columns; the
//     f32 result goes out with red.global.add.
// * Epilogue: dK (× scale) and dV stored from registers (or added into the split
//   accumulators when a kv head's group is split over CTAs).
// Rows past seq_q and keys past seq_k arrive as zeros (TMA out-of-bounds fill) and are masked
// to P = dS = 0; head dims below the instance's run on it through the zero columns.
//
// Version 2 (this file). v1 issued the five GEMMs in order (Sᵀ, dPᵀ; then dV and dK after
// all of P and dS) and added dQ with scalar f32 atomics; v2 issues dV's GEMM as soon as P is
// in registers (dS is computed under it) and adds dQ (and split dK/dV) with 8-byte vector
// reductions (red.global.add.v2.f32). A v3 that staged dQ in shared memory for bulk
// reductions by a producer thread (one per row) was 1.2-1.6x slower than v2 and was dropped.
// Measured (H100 80GB HBM3, bf16, `attention_backward` alone, criterion medians; PyTorch 2.11
// SDPA backward in the same call, lab/results/s9-hbwd-final-h100): (16,16,2048,d64) 2401 µs,
// 1.16x FA2, 0.74x cuDNN; causal 1482 µs, 1.20x / 0.75x; (16,16,2048,d128) 3969 µs = 346 TF/s,
// 1.30x / 0.75x; causal 2445 µs, 1.28x / 0.75x; (4,32,4096,d128) 7384 µs, 1.28x / 0.74x;
// causal 4098 µs, 1.28x / 0.77x; (1,32,16384,d128) 27908 µs = 394 TF/s, 1.32x / 0.74x; causal
// 14190 µs, 1.40x / 0.76x; (4,9,2048,d64) 389 µs, 1.16x / 0.72x; causal 259 µs, 1.17x / 0.76x.
// The sm_80 main kernel on the same GPU: 1.5-1.8x slower (v1 call). ptxas 13.0 (sm_90a): 168
// registers at entry, consumers raised to 240 by setmaxnreg, no spills except d64 _mods (48
// bytes); the plain d64 entries get C7512 ("wgmma serialized due to insufficient register
// resources": 128-row items hold Sᵀ and dPᵀ in 64 registers each). ncu of v2 at (16,16,2048,d64): issue slots 25% busy, 8.5 warp cycles per issued
// instruction (stalls per instruction: long scoreboard 2.54, barrier 2.16, wait 1.31).

#include "common/bwd_index.cuh"
#include "common/kv_addr.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"
#include "common/wgmma.cuh"

namespace fattn {
namespace hopper_bwd {

using bwd::BwdCta;
using bwd::RowRange;
using bwd::SeqView;

// ---- tile traits --------------------------------------------------------------------------

template <int kHeadDim_, int kBlockM_, int kStages_>
struct HopperBwdConfig {
    static constexpr int kHeadDim = kHeadDim_;
    // Query rows per item (one q head's block).
    static constexpr int kBlockM = kBlockM_;
    // Keys per CTA: 64 per consumer warpgroup (one wgmma m64 row block).
    static constexpr int kBlockN = 128;
    static constexpr int kConsumers = 2;
    // Consumer warpgroups first (warps 0..7), then the producer warpgroup, whose registers
    // go to the consumers (setmaxnreg): ptxas gives a 384-thread wgmma kernel 168 registers
    // per thread at entry, and the consumers need about 220.
    static constexpr int kThreads = 128 * (kConsumers + 1);
    static constexpr int kProducerRegs = 24;
    static constexpr int kConsumerRegs = 240;
    static constexpr int kStages = kStages_;
    static constexpr int kPanels = kHeadDim / 64;
    static constexpr int kKVBytes = kBlockN * kHeadDim * 2;  // K or V
    static constexpr int kQBytes = kBlockM * kHeadDim * 2;   // Q or dO, one stage
    static constexpr int kDSBytes = kBlockM * kBlockN * 2;   // one dS buffer
    static constexpr int kStatBytes = kBlockM * 4;           // lse or D, one stage
    // dQ of an item (kBlockM × kHeadDim) split between the consumers: by rows at kBlockM 128,
    // by columns at kBlockM 64 (a wgmma is 64 rows).
    static constexpr bool kDQSplitRows = kBlockM == 128;
    static constexpr int kDQN = kDQSplitRows ? kHeadDim : kHeadDim / 2;
    // K/V; full/empty per stage.
    static constexpr int kBarriers = 1 + 2 * kStages;
    static constexpr int kSmemBytes =
        1024 + 2 * kKVBytes + kStages * (2 * kQBytes + 2 * kStatBytes) + 2 * kDSBytes + kBarriers * 8;

    static_assert(kHeadDim % 64 == 0, "the head dim is whole 64-column panels");
    static_assert(kBlockM == 64 || kBlockM == 128, "an item is one or two wgmma row blocks of queries");
    static_assert(kDQN == 64 || kDQN == 128, "dQ's wgmma n is an instantiated shape");
    static_assert(kStages >= 2, "the ring needs two stages to overlap loads with compute");
    static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0 && kDSBytes % 1024 == 0,
                  "every tile starts on a 1 KiB swizzle atom");
    static_assert(kStatBytes % 16 == 0, "bulk copies are whole 16-byte chunks");
    static_assert(kBlockN * 128 < (1 << 18) && kBlockM * 128 < (1 << 18), "panel strides fit the descriptor");
    static_assert(kSmemBytes <= 227 * 1024, "tile does not fit the 227 KiB an H100 block may opt into");
    static_assert(kBlockN <= 128, "key blocks of at most the 128-key workspace padding");
    // setmaxnreg moves registers within the launch allocation (65536 / threads, rounded down to
    // 8, per thread): an increase the decreases do not cover waits forever.
    static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= (65536 / kThreads) / 8 * 8 * kThreads,
                  "setmaxnreg budgets exceed the launch allocation");
    static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
};

// Per head-dim instance. Consumer registers per thread: dK + dV (kHeadDim each / 2 per 64
// keys · 128 threads: kHeadDim), Sᵀ + dPᵀ (kBlockM), their bf16 fragments, dQ (kDQN / 2).
template <int kHeadDim>
struct HopperBwdTraits;
template <>
struct HopperBwdTraits<64> : HopperBwdConfig<64, 128, 2> {};
template <>
struct HopperBwdTraits<128> : HopperBwdConfig<128, 64, 2> {};

// Named barrier 1: the two consumer warpgroups' dS halves are in shared memory.
constexpr int kDSBarrier = 1;

// dst[0] += a, dst[1] += b in global memory, one vector reduction (sm_90); dst 8-byte aligned.
__device__ __forceinline__ void red_add_v2(float* dst, float a, float b) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
}

// ---- the kernel ---------------------------------------------------------------------------

template <class Cfg, class E, bool kMods>
__device__ __forceinline__ void bwd_hopper(const FattnHopperBwdParams& hp) {
    constexpr int D = Cfg::kHeadDim, BM = Cfg::kBlockM, BN = Cfg::kBlockN, ST = Cfg::kStages;
    const FattnBwdParams& bp = hp.bwd;
    const FattnParams& p = bp.fwd;

    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    uint8_t* const smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    uint8_t* const sK = smem;
    uint8_t* const sV = sK + Cfg::kKVBytes;
    uint8_t* const sQ = sV + Cfg::kKVBytes;        // stage s at + s · kQBytes
    uint8_t* const sdO = sQ + ST * Cfg::kQBytes;   // likewise
    uint8_t* const sDS = sdO + ST * Cfg::kQBytes;  // buffer i at + i · kDSBytes
    float* const sLse = reinterpret_cast<float*>(sDS + 2 * Cfg::kDSBytes);  // stage s at + s · BM
    float* const sDsum = sLse + ST * BM;
    uint64_t* const bar_kv = reinterpret_cast<uint64_t*>(sDsum + ST * BM);
    uint64_t* const full = bar_kv + 1;
    uint64_t* const empty = full + ST;

    const BwdCta cta = bwd::bwd_cta(static_cast<int>(blockIdx.x), p.seq_q, p.seq_k, p.kv_heads, p.kv_group,
                                    p.window_left, p.window_right, bp.kv_splits, bp.heads_per_split, BN, BM, 1, D,
                                    static_cast<int>(gridDim.x), p.tail_groups);
    const SeqView sv = bwd::seq_view<false>(bp, cta.b);
    const int items = cta.items;
    const int n0 = cta.n0;
    // Item it: q head h_first + it / nm, query block mb_begin + it % nm.
    auto item_head = [&](int it) { return cta.h_first + it / cta.nm; };
    auto item_m0 = [&](int it) { return (cta.mb_begin + it % cta.nm) * BM; };

    if (threadIdx.x == 0) {
        sm90::mbar_init(bar_kv, 1);
#pragma unroll
        for (int s = 0; s < ST; ++s) {
            sm90::mbar_init(&full[s], 1);
            // Every consumer thread arrives once it is done with the stage (each read lse and
            // D with ordinary loads: its own arrival orders them before the refill).
            sm90::mbar_init(&empty[s], Cfg::kConsumers * 128);
        }
        sm90::fence_barrier_init();
    }
    __syncthreads();

    const int warp_group = threadIdx.x / 128;
    if (warp_group == Cfg::kConsumers) {
        // ---- producer warpgroup: one thread issues every copy ----
        sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
        if (threadIdx.x == Cfg::kConsumers * 128 && items > 0) {
            sm90::prefetch_tma_desc(&hp.tma_q);
            sm90::prefetch_tma_desc(&hp.tma_k);
            sm90::prefetch_tma_desc(&hp.tma_v);
            sm90::prefetch_tma_desc(&hp.tma_do);
            sm90::mbar_arrive_expect_tx(bar_kv, 2 * Cfg::kKVBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kPanels; ++c) {
                sm90::tma_load_4d(sK + c * BN * 128, &hp.tma_k, bar_kv, c * 64, n0, cta.kvh, cta.b);
                sm90::tma_load_4d(sV + c * BN * 128, &hp.tma_v, bar_kv, c * 64, n0, cta.kvh, cta.b);
            }
            for (int it = 0; it < items; ++it) {
                const int st = it % ST;
                const uint32_t phase = (it / ST) & 1;
                const int h = item_head(it), m0 = item_m0(it);
                // A stage is free again once every consumer thread released its previous use.
                if (it >= ST) sm90::mbar_wait(&empty[st], phase ^ 1);
                sm90::mbar_arrive_expect_tx(&full[st], 2 * Cfg::kQBytes + 2 * Cfg::kStatBytes);
#pragma unroll
                for (int c = 0; c < Cfg::kPanels; ++c) {
                    sm90::tma_load_4d(sQ + st * Cfg::kQBytes + c * BM * 128, &hp.tma_q, &full[st], c * 64, m0, h,
                                      cta.b);
                    sm90::tma_load_4d(sdO + st * Cfg::kQBytes + c * BM * 128, &hp.tma_do, &full[st], c * 64, m0, h,
                                      cta.b);
                }
                // The preprocess wrote every padded row (0 / +inf past seq_q); rows are 16-byte
                // aligned (seq_q_pad and m0 multiples of 64 floats).
                const int64_t row = static_cast<int64_t>(sv.ws_q0) + static_cast<int64_t>(h) * bp.ws_rows_q + m0;
                sm90::bulk_load(sLse + st * BM, bp.lse_log2 + row, Cfg::kStatBytes, &full[st]);
                sm90::bulk_load(sDsum + st * BM, bp.dsum + row, Cfg::kStatBytes, &full[st]);
            }
        }
        return;
    }

    // ---- consumers ----
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cw = warp_group;
    const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int key_w0 = cw * 64 + warp * 16;  // the warp's first key within the block

    float dk[D / 2];
    float dv[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) {
        dk[i] = 0.f;
        dv[i] = 0.f;
    }

    if (items > 0) {
        sm90::mbar_wait(bar_kv, 0);
        const uint32_t k_tile = smem_addr(sK);
        const uint32_t v_tile = smem_addr(sV);
        // dQ's part of this warpgroup: rows dq_row0.. (split by rows) or columns dq_col0..
        constexpr int kDQN = Cfg::kDQN;
        const int dq_row0 = Cfg::kDQSplitRows ? cw * 64 : 0;
        const int dq_col0 = Cfg::kDQSplitRows ? 0 : cw * kDQN;

        for (int it = 0; it < items; ++it) {
            const int st = it % ST;
            const uint32_t phase = (it / ST) & 1;
            const int h = item_head(it), m0 = item_m0(it);
            float alibi_log2 = 0.f;
            if (kMods && p.alibi_slopes != nullptr) alibi_log2 = p.alibi_slopes[cta.b * p.heads + h] * CUDART_L2E_F;
            const uint32_t q_tile = smem_addr(sQ) + st * Cfg::kQBytes;
            const uint32_t do_tile = smem_addr(sdO) + st * Cfg::kQBytes;
            sm90::mbar_wait(&full[st], phase);

            // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ: this warpgroup's 64 keys × BM queries, D/16 k-steps
            // of 32 bytes into the 128-byte rows of a panel.
            float s[BM / 2];
            float dp[BM / 2];
            sm90::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const uint64_t a = sm90::desc_sw128(k_tile + (kk / 4) * BN * 128 + cw * 64 * 128 + (kk % 4) * 32, 16, 1024);
                const uint64_t b = sm90::desc_sw128(q_tile + (kk / 4) * BM * 128 + (kk % 4) * 32, 16, 1024);
                sm90::Wgmma<E, BM>::ss(s, a, b, kk > 0 ? 1 : 0);
            }
            sm90::wgmma_commit();
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const uint64_t a = sm90::desc_sw128(v_tile + (kk / 4) * BN * 128 + cw * 64 * 128 + (kk % 4) * 32, 16, 1024);
                const uint64_t b = sm90::desc_sw128(do_tile + (kk / 4) * BM * 128 + (kk % 4) * 32, 16, 1024);
                sm90::Wgmma<E, BM>::ss(dp, a, b, kk > 0 ? 1 : 0);
            }
            sm90::wgmma_commit();

            // Pᵀ and dSᵀ in place, element 4j + e: key n0 + key_w0 + g + 8·(e/2), query
            // m0 + 8j + 2t + e%2. Every element first; on blocks that some row of the warp sees
            // partially (or padding rows/keys), P is then zeroed exactly where masked (whatever
            // exp2 gave there), and dS = P∘(...) with it.
            const float* lse_s = sLse + st * BM;
            const float* dsum_s = sDsum + st * BM;
            const bool masked = !bwd::block_fully_visible_seq(sv, p.window_left, p.window_right, m0, m0 + BM - 1,
                                                              n0 + key_w0, n0 + key_w0 + 16);
            auto mask_p = [&]() {
#pragma unroll
                for (int hf = 0; hf < 2; ++hf) {
                    // The key's visible query columns [qlo, qhi), relative to m0 + 2t (empty for
                    // keys >= seq_k; rows >= seq_q are never visible).
                    const RowRange rr = bwd::rows_seeing_key(p, n0 + key_w0 + g + 8 * hf);
                    const int qlo = rr.lo - m0 - 2 * t;
                    const int qhi = rr.hi - m0 - 2 * t;
#pragma unroll
                    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const int qc = 8 * j + e;
                            if (qc < qlo || qc >= qhi) s[4 * j + 2 * hf + e] = 0.f;
                        }
                }
            };
            // Pᵀ and dSᵀ as wgmma A fragments: the accumulators of query columns
            // 16kk..16kk+15 are k-step kk.
            uint32_t pf[BM / 16][4];
            uint32_t dsf[BM / 16][4];
            auto to_fragments = [&](const float(&x)[BM / 2], uint32_t(&f)[BM / 16][4]) {
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
                    for (int r = 0; r < 4; ++r) f[kk][r] = E::pack(x[8 * kk + 2 * r], x[8 * kk + 2 * r + 1]);
            };
            // dV += Pᵀ dO and dK += dSᵀ Q: BM/16 k-steps of 16 queries (2048 bytes of a panel);
            // dO and Q as MN-major B: 8-row atoms 1024 bytes apart, panels BM · 128 apart.
            auto issue_dv = [&]() {
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk)
                    sm90::Wgmma<E, D>::rs(dv, pf[kk], sm90::desc_sw128(do_tile + kk * 16 * 128, BM * 128, 1024), 1);
            };
            auto issue_dk = [&]() {
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk)
                    sm90::Wgmma<E, D>::rs(dk, dsf[kk], sm90::desc_sw128(q_tile + kk * 16 * 128, BM * 128, 1024), 1);
            };
            if constexpr (!kMods) {
                // P while dPᵀ's GEMM runs, then dV's GEMM while dS is computed.
                sm90::wgmma_wait<1>();
                sm90::fence_regs(s);
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
                    const float2 l2 = *reinterpret_cast<const float2*>(lse_s + 8 * j + 2 * t);
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        s[4 * j + e] = exp2_approx(fmaf(s[4 * j + e], p.scale_log2, e % 2 == 0 ? -l2.x : -l2.y));
                }
                if (masked) mask_p();
                to_fragments(s, pf);
                sm90::wgmma_fence();
                issue_dv();
                sm90::wgmma_commit();
                sm90::wgmma_wait<1>();  // dPᵀ (dV's GEMM may still run)
                sm90::fence_regs(dp);
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
                    const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + 8 * j + 2 * t);
#pragma unroll
                    for (int e = 0; e < 4; ++e) dp[4 * j + e] = s[4 * j + e] * (dp[4 * j + e] - (e % 2 == 0 ? d2.x : d2.y));
                }
                to_fragments(dp, dsf);
                sm90::wgmma_fence();
                issue_dk();
                sm90::wgmma_commit();
            } else {
                sm90::wgmma_wait<0>();
                sm90::fence_regs(s);
                sm90::fence_regs(dp);
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
                    const float2 l2 = *reinterpret_cast<const float2*>(lse_s + 8 * j + 2 * t);
                    const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + 8 * j + 2 * t);
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        // row + sk - sq - key
                        const int rel = m0 + 8 * j + 2 * t + e % 2 + (sv.sk - sv.sq) - (n0 + key_w0 + g + 8 * (e / 2));
                        float th;
                        const float x = bwd::mod_score_log2(p, s[4 * j + e], alibi_log2, rel, th);
                        const float pr = exp2_approx(x - (e % 2 == 0 ? l2.x : l2.y));
                        s[4 * j + e] = pr;
                        dp[4 * j + e] = (dp[4 * j + e] - (e % 2 == 0 ? d2.x : d2.y)) * (1.f - th * th);
                    }
                }
                if (masked) mask_p();
#pragma unroll
                for (int i = 0; i < BM / 2; ++i) dp[i] *= s[i];
                to_fragments(s, pf);
                to_fragments(dp, dsf);
                sm90::wgmma_fence();
                issue_dv();
                issue_dk();
                sm90::wgmma_commit();
            }

            // dS → shared memory as [query][key] (keys contiguous, 64-key panels of BM rows,
            // the 128-byte swizzle): fragment k-step kk holds matrices (keys +0/+8) × (queries
            // +0/+8); stored transposed, lane 8i + j gives row j (a query) of matrix i.
            uint8_t* const ds_buf = sDS + (it & 1) * Cfg::kDSBytes;
            {
                const int mi = lane / 8, mj = lane % 8;
                const int chunk = warp * 2 + (mi % 2);  // the 8 keys' 16-byte chunk in this panel
                const uint32_t panel = smem_addr(ds_buf) + cw * BM * 128;
#pragma unroll
                for (int kk = 0; kk < BM / 16; ++kk) {
                    const int r = 16 * kk + (mi / 2) * 8 + mj;
                    sm90::stmatrix_x4_trans(panel + r * 128 + ((chunk ^ (r % 8)) * 16), dsf[kk]);
                }
            }
            // Generic-proxy writes that wgmma (the async proxy) reads next; both halves of dS
            // (each warpgroup's keys) must be there. This buffer was last read by the dQ GEMMs
            // of item it - 2, which both warpgroups waited for before arriving at this barrier
            // in item it - 1, so no second barrier guards the writes above.
            sm90::fence_proxy_async();
            sm90::named_barrier_sync(kDSBarrier, Cfg::kConsumers * 128);

            // dQ = dS K over the 128 keys: A = dS (K-major, this warpgroup's rows), B = K
            // (MN-major, this warpgroup's columns).
            float dq[kDQN / 2];
            const uint32_t ds_tile = smem_addr(ds_buf);
            sm90::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BN / 16; ++kk) {
                const uint64_t a = sm90::desc_sw128(ds_tile + (kk / 4) * BM * 128 + dq_row0 * 128 + (kk % 4) * 32, 16, 1024);
                const uint64_t b = sm90::desc_sw128(k_tile + (dq_col0 / 64) * BN * 128 + kk * 16 * 128, BN * 128, 1024);
                sm90::Wgmma<E, kDQN>::ss_tb(dq, a, b, kk > 0 ? 1 : 0);
            }
            sm90::wgmma_commit();
            sm90::wgmma_wait<0>();
            sm90::fence_regs(dq);
            sm90::fence_regs(dk);
            sm90::fence_regs(dv);
#pragma unroll
            for (int kk = 0; kk < BM / 16; ++kk) {
                sm90::fence_regs(pf[kk]);
                sm90::fence_regs(dsf[kk]);
            }
            // Q, dO, lse and D of this stage are read.
            sm90::mbar_arrive(&empty[st]);

            float* const dqa = bp.dq_accum +
                               (static_cast<int64_t>(sv.ws_q0) + static_cast<int64_t>(h) * bp.ws_rows_q + m0 + dq_row0) *
                                   bp.head_dim_inst +
                               dq_col0;
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int r = warp * 16 + g + 8 * hf;
                if (m0 + dq_row0 + r >= sv.sq) continue;  // padding rows add nothing
                float* const dst = dqa + static_cast<int64_t>(r) * bp.head_dim_inst + 2 * t;
#pragma unroll
                for (int j = 0; j < kDQN / 8; ++j) red_add_v2(dst + 8 * j, dq[4 * j + 2 * hf], dq[4 * j + 2 * hf + 1]);
            }
        }
    }

    // ---- epilogue: dK (× scale) and dV of the warp's 16 keys ----
    const float scale = p.scale;
    const int kvh = cta.kvh;
    if (bp.dk_accum != nullptr) {
        if (items == 0) return;  // the accumulators start at zero
        const int64_t base = (sv.ws_k0 + static_cast<int64_t>(kvh) * bp.ws_rows_k + n0 + key_w0) * bp.head_dim_inst;
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int64_t row = base + static_cast<int64_t>(g + 8 * hf) * bp.head_dim_inst + 2 * t;
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                red_add_v2(bp.dk_accum + row + 8 * j, dk[4 * j + 2 * hf] * scale, dk[4 * j + 2 * hf + 1] * scale);
                red_add_v2(bp.dv_accum + row + 8 * j, dv[4 * j + 2 * hf], dv[4 * j + 2 * hf + 1]);
            }
        }
        return;
    }
    const bool even_d = (p.head_dim & 1) == 0;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
        const int key = n0 + key_w0 + g + 8 * hf;
        if (key >= sv.sk) continue;
        const int64_t row = ((sv.kout_row0 + key) * p.kv_heads + kvh) * p.head_dim;
        uint16_t* const dkr = static_cast<uint16_t*>(bp.dk) + row;
        uint16_t* const dvr = static_cast<uint16_t*>(bp.dv) + row;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
            const int col = 8 * j + 2 * t;
            if (col >= p.head_dim) continue;
            const uint32_t kp = E::pack(dk[4 * j + 2 * hf] * scale, dk[4 * j + 2 * hf + 1] * scale);
            const uint32_t vp = E::pack(dv[4 * j + 2 * hf], dv[4 * j + 2 * hf + 1]);
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

}  // namespace hopper_bwd
}  // namespace fattn

// ---- entry points ------------------------------------------------------------------------
//
// Declared once in src/cuda/instances.rs (Family::Bwd, Arch::Sm90a); build.rs expands
// FATTN_INSTANCE_BWD per instance of this file and checks the launch numbers against the
// traits. VARIANT: 0 plain, 1 softcap/ALiBi (`_mods`). Dense batches only (the host keeps
// packed ones on kernels/bwd_sm80.cu); no column splits, no large-smem second tile.

#define FATTN_INSTANCE_BWD(DTYPE, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM, COL_SPLITS, LARGE_SMEM)               \
    static_assert(VARIANT == 0 || VARIANT == 1, #NAME ": a Hopper instance is plain or _mods");                      \
    static_assert(COL_SPLITS == 1 && LARGE_SMEM == 0, #NAME ": no column splits, no second tile");                   \
    static_assert(fattn::hopper_bwd::HopperBwdTraits<D>::kHeadDim == D, #NAME ": head dim");                        \
    static_assert(fattn::hopper_bwd::HopperBwdTraits<D>::kThreads == THREADS, #NAME ": threads differ from instances.rs"); \
    static_assert(fattn::hopper_bwd::HopperBwdTraits<D>::kBlockM == ROWS, #NAME ": block rows differ from instances.rs"); \
    static_assert(fattn::hopper_bwd::HopperBwdTraits<D>::kBlockN == KEYS, #NAME ": key block differs from instances.rs"); \
    static_assert(fattn::hopper_bwd::HopperBwdTraits<D>::kSmemBytes == SMEM, #NAME ": smem bytes differ from instances.rs"); \
    extern "C" __global__ void __launch_bounds__(fattn::hopper_bwd::HopperBwdTraits<D>::kThreads, 1)                \
        NAME(const __grid_constant__ FattnHopperBwdParams p) {                                                     \
        fattn::hopper_bwd::bwd_hopper<fattn::hopper_bwd::HopperBwdTraits<D>, fattn::DTYPE, VARIANT == 1>(p);        \
    }
