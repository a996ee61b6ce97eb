// Host-only self-check of kernels/bwd_sm80.cu's tensor-core backward: no GPU needed.
//
//   eval "$(scripts/cuda-toolkit.sh)"
//   nvcc -std=c++17 -O2 -arch=sm_80 --expt-relaxed-constexpr -I kernels lab/bwd/bwd_selfcheck.cu -o /tmp/bwd_selfcheck
//   /tmp/bwd_selfcheck
//
// (from the repository root). It includes the kernel file alone, without the entry points that
// build.rs generates: those only instantiate the templates replayed here.
//
// It replays, warp by warp and lane by lane, what `bwd_tensor_core` does for every CTA of a
// problem, with the kernel's own index helpers (bwd_cta, rows_seeing_key, swizzle, frag_addr,
// the ldmatrix lane patterns, BwdTraits): ldmatrix (.x4, plain and .trans) and mma.sync
// m16n8k16 are emulated from their PTX-documented fragment layouts, shared memory is a byte
// array, and cp.async is modelled adversarially: at issue the destination is filled with NaN
// and the data lands only at the cp.async.wait_group that covers its group, so a read before
// the right wait + barrier, or a load that overwrites a tile another warp still reads in the
// same barrier interval, shows up as NaN in the gradients. The results are compared with an
// f64 backward on the same bf16 inputs (the forward's O rounded to bf16, as the kernel sees
// it). The replay follows the kernel's barrier structure by hand: when the kernel's loop
// changes, this file must change with it.
//
// Also replays the f32 kernel (thread by thread between its barriers). Not covered: the
// preprocess/convert kernels (replayed here as plain loops),
// the element-wise (unaligned) load path's thread mapping, timing.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bwd_sm80.cu"

using namespace fattn::bwd;

// ---- bf16 ---------------------------------------------------------------------------------

static uint16_t f2bf(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
static float bf2f(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static uint32_t pack2(float lo, float hi) { return f2bf(lo) | (static_cast<uint32_t>(f2bf(hi)) << 16); }
static float lo_of(uint32_t r) { return bf2f(static_cast<uint16_t>(r & 0xffffu)); }
static float hi_of(uint32_t r) { return bf2f(static_cast<uint16_t>(r >> 16)); }

// ---- shared memory and cp.async ----------------------------------------------------------

struct Smem {
    std::vector<uint8_t> b;
    explicit Smem(int bytes) : b(bytes, 0xff) {}  // uninitialized shared memory reads as NaN
    uint16_t ld16(uint32_t a) const {
        check(a, 2);
        uint16_t x;
        memcpy(&x, &b[a], 2);
        return x;
    }
    uint32_t ld32(uint32_t a) const {
        check(a, 4);
        uint32_t x;
        memcpy(&x, &b[a], 4);
        return x;
    }
    float ldf(uint32_t a) const {
        check(a, 4);
        float x;
        memcpy(&x, &b[a], 4);
        return x;
    }
    void st32(uint32_t a, uint32_t x) {
        check(a, 4);
        memcpy(&b[a], &x, 4);
    }
    void check(uint32_t a, int n) const {
        if (a % n != 0 || a + n > b.size()) {
            fprintf(stderr, "shared access out of bounds or misaligned: %u (+%d) of %zu\n", a, n, b.size());
            exit(2);
        }
    }
};

struct CpAsync {
    struct Copy {
        uint32_t dst;
        uint8_t data[16];
        int group;
    };
    std::vector<Copy> pending;
    int open_group = 0;
    // Issue: the destination is undefined (NaN) until a wait covers it.
    void issue(Smem& s, uint32_t dst, const void* src, bool valid) {
        s.check(dst, 16);
        Copy c;
        c.dst = dst;
        c.group = open_group;
        if (valid) {
            memcpy(c.data, src, 16);
        } else {
            memset(c.data, 0, 16);
        }
        memset(&s.b[dst], 0xff, 16);
        pending.push_back(c);
    }
    void commit() { ++open_group; }
    // cp.async.wait_group n: every committed group but the newest n has landed.
    void wait(Smem& s, int n) {
        const int limit = open_group - n;  // groups < limit complete
        std::vector<Copy> keep;
        for (const Copy& c : pending) {
            if (c.group < limit) {
                memcpy(&s.b[c.dst], c.data, 16);
            } else {
                keep.push_back(c);
            }
        }
        pending.swap(keep);
    }
};

// ---- ldmatrix and mma ------------------------------------------------------------------

using Regs4 = uint32_t[4];

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: matrix i's 8 rows come from the addresses
// of lanes 8i..8i+7. Plain: lane T gets row T/4, elements 2(T%4), 2(T%4)+1. Trans: lane T gets
// (row 2(T%4), element T/4) and (row 2(T%4)+1, element T/4).
static void ldsm(const Smem& s, const uint32_t (&addr)[32], uint32_t (&out)[32][4], bool trans) {
    for (int i = 0; i < 4; ++i)
        for (int T = 0; T < 32; ++T) {
            const int g = T / 4, t = T % 4;
            if (!trans) {
                out[T][i] = s.ld32(addr[8 * i + g] + 4 * t);
            } else {
                const uint32_t lo = s.ld16(addr[8 * i + 2 * t] + 2 * g);
                const uint32_t hi = s.ld16(addr[8 * i + 2 * t + 1] + 2 * g);
                out[T][i] = lo | (hi << 16);
            }
        }
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: A regs {row g, k 2t..}, {row g+8, k
// 2t..}, {row g, k 2t+8..}, {row g+8, k 2t+8..}; B regs {k 2t.., col g}, {k 2t+8.., col g};
// C {row g, cols 2t, 2t+1}, {row g+8, cols 2t, 2t+1}.
static void mma(float (&c)[32][4], const uint32_t (&a)[32][4], const uint32_t (&b0)[32], const uint32_t (&b1)[32]) {
    float A[16][16], B[16][8];
    for (int T = 0; T < 32; ++T) {
        const int g = T / 4, t = T % 4;
        A[g][2 * t] = lo_of(a[T][0]);
        A[g][2 * t + 1] = hi_of(a[T][0]);
        A[g + 8][2 * t] = lo_of(a[T][1]);
        A[g + 8][2 * t + 1] = hi_of(a[T][1]);
        A[g][2 * t + 8] = lo_of(a[T][2]);
        A[g][2 * t + 9] = hi_of(a[T][2]);
        A[g + 8][2 * t + 8] = lo_of(a[T][3]);
        A[g + 8][2 * t + 9] = hi_of(a[T][3]);
        B[2 * t][g] = lo_of(b0[T]);
        B[2 * t + 1][g] = hi_of(b0[T]);
        B[2 * t + 8][g] = lo_of(b1[T]);
        B[2 * t + 9][g] = hi_of(b1[T]);
    }
    for (int T = 0; T < 32; ++T) {
        const int g = T / 4, t = T % 4;
        for (int e = 0; e < 4; ++e) {
            const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
            float acc = c[T][e];
            for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][col];
            c[T][e] = acc;
        }
    }
}

// ---- the problem ----------------------------------------------------------------------------

struct Case {
    std::string name;
    int batch, heads, kv_heads, seq_q, seq_k, head_dim;
    float scale, softcap;
    int window_left, window_right;  // normalized as src/problem.rs does (-1 = unbounded)
    bool alibi;
    int kv_splits;  // 1, or a divisor of the group
    int q_row_pad;  // extra elements per q/k/v/dO row (strided views); 0 = contiguous
};

struct Tensors {
    // (batch, seq, heads, row_len) bf16, row_len = head_dim + pad
    std::vector<uint16_t> q, k, v, d_o;
    std::vector<float> alibi;  // (batch, heads)
    int row_len;
};

static double ref_score(const Case& c, const std::vector<double>& qf, const std::vector<double>& kf, int b, int h,
                        int i, int j, const std::vector<float>& alibi, double* tanh_out) {
    const int kvh = h / (c.heads / c.kv_heads);
    double dot = 0;
    for (int x = 0; x < c.head_dim; ++x)
        dot += qf[((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h) * c.head_dim + x] *
               kf[((static_cast<size_t>(b) * c.seq_k + j) * c.kv_heads + kvh) * c.head_dim + x];
    double s = c.scale * dot;
    *tanh_out = 0;
    if (c.softcap > 0) {
        *tanh_out = std::tanh(s / c.softcap);
        s = c.softcap * *tanh_out;
    }
    if (c.alibi) s -= alibi[b * c.heads + h] * std::fabs(static_cast<double>(i + c.seq_k - c.seq_q - j));
    return s;
}

static bool visible(const Case& c, int i, int j) {
    const int diag = i + c.seq_k - c.seq_q;
    const int lo = c.window_left < 0 ? 0 : std::max(0, diag - c.window_left);
    const int hi = c.window_right < 0 ? c.seq_k : std::min(c.seq_k, diag + c.window_right + 1);
    return j >= lo && j < hi;
}

template <class Cfg, bool kMods>
struct Replay {
    static constexpr int D = Cfg::kHeadDim, DO = Cfg::kDOut, BM = Cfg::kBlockM, BN = Cfg::kBlockN;
    static constexpr int MT = Cfg::kMTiles, ST = Cfg::kStages, CPR = Cfg::kCPR, CPRM = Cfg::kCPRM;
    static constexpr int QR = Cfg::kDQRows, QC = Cfg::kDQCols, W = Cfg::kWarps;
    static constexpr uint32_t kTileQBytes = Cfg::kTileQ * 2;
    static constexpr int kKVRegSteps = Cfg::kKVInRegs ? D / 16 : 1;

    // Shared layout (byte offsets from a 1 KiB aligned base 0), as in bwd_tensor_core.
    static constexpr uint32_t sK = 0;
    static constexpr uint32_t sV = sK + Cfg::kTileKV * 2;
    static constexpr uint32_t sQ = sV + Cfg::kTileKV * 2;
    static constexpr uint32_t sdO = sQ + ST * Cfg::kTileQ * 2;
    static constexpr uint32_t sdS = Cfg::kDSInQ ? sQ : sdO + ST * Cfg::kTileQ * 2;
    static constexpr uint32_t sLse = sdO + ST * Cfg::kTileQ * 2 + Cfg::kTileDS * 2;
    static constexpr uint32_t sDsum = sLse + ST * BM * 4;
    static_assert(sDsum + ST * BM * 4 == static_cast<uint32_t>(Cfg::kSmemBytes), "layout mirrors kSmemBytes");

    const FattnBwdParams& bp;
    const FattnParams& p;
    Smem sm{Cfg::kSmemBytes};
    CpAsync cp;

    // Per warp and lane registers.
    float dk[W][MT][DO / 8][32][4];
    float dv[W][MT][DO / 8][32][4];
    float sT[W][MT][BM / 8][32][4];
    float dpt[W][MT][BM / 8][32][4];
    uint32_t pp[W][MT][BM / 16][32][4];
    uint32_t dsp[W][MT][BM / 16][32][4];
    uint32_t kfr[W][MT][kKVRegSteps][32][4];
    uint32_t vfr[W][MT][kKVRegSteps][32][4];

    Replay(const FattnBwdParams& b) : bp(b), p(b.fwd) {}

    void load_tile(uint32_t dst, const uint16_t* g, int64_t row_stride, int row0, int row_end, int rows) {
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < CPR; ++c) {
                const int row = row0 + r;
                uint16_t buf[8];
                for (int e = 0; e < 8; ++e)
                    buf[e] = (row < row_end && c * 8 + e < p.head_dim) ? g[row * row_stride + c * 8 + e] : 0;
                cp.issue(sm, dst + swizzle<CPR>(r, c) * 16, buf, true);
            }
    }
    void load_do(int b, int h, int m0, int stage) {
        const uint16_t* dog = static_cast<const uint16_t*>(bp.d_o) + b * bp.do_batch_stride + h * bp.do_head_stride;
        load_tile(sdO + stage * kTileQBytes, dog, bp.do_seq_stride, m0, p.seq_q, BM);
    }
    void load_q(int b, int h, int m0, int stage) {
        const uint16_t* qg = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
        load_tile(sQ + stage * kTileQBytes, qg, p.q_seq_stride, m0, p.seq_q, BM);
        const int64_t row = (static_cast<int64_t>(b) * p.heads + h) * bp.seq_q_pad + m0;
        for (int tid = 0; tid < BM / 2; ++tid) {
            if (tid < BM / 4) {
                cp.issue(sm, sLse + stage * BM * 4 + tid * 16, bp.lse_log2 + row + tid * 4, true);
            } else {
                const int c = tid - BM / 4;
                cp.issue(sm, sDsum + stage * BM * 4 + c * 16, bp.dsum + row + c * 4, true);
            }
        }
    }

    // Sᵀ/dPᵀ: acc = (warp's rows of the A tile) · (rows of the B tile)ᵀ over D.
    void gemm_rows_t(int w, float (&acc)[MT][BM / 8][32][4], uint32_t a_tile, const uint32_t (&afr)[MT][kKVRegSteps][32][4],
                     uint32_t b_tile) {
        const int kw0 = w * Cfg::kWarpKeys;
        uint32_t a_base[32], b_base[32];
        for (int lane = 0; lane < 32; ++lane) {
            a_base[lane] = a_tile + (kw0 * CPR + swizzle<CPR>(pat1_row(lane), pat1_chunk(lane))) * 16;
            b_base[lane] = b_tile + swizzle<CPR>(pat2_row(lane), pat2_chunk(lane)) * 16;
        }
        for (int mt = 0; mt < MT; ++mt)
            for (int nt = 0; nt < BM / 8; ++nt)
                for (int l = 0; l < 32; ++l)
                    for (int e = 0; e < 4; ++e) acc[mt][nt][l][e] = 0.f;
        for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t a[MT][32][4];
            for (int mt = 0; mt < MT; ++mt) {
                if (Cfg::kKVInRegs) {
                    memcpy(a[mt], afr[mt][kk], sizeof(a[mt]));
                } else {
                    uint32_t addr[32];
                    for (int l = 0; l < 32; ++l) addr[l] = frag_addr<CPR>(a_base[l], mt * 16, kk * 2);
                    ldsm(sm, addr, a[mt], false);
                }
            }
            for (int nq = 0; nq < BM / 16; ++nq) {
                uint32_t addr[32], bf[32][4], b0[32], b1[32], b2[32], b3[32];
                for (int l = 0; l < 32; ++l) addr[l] = frag_addr<CPR>(b_base[l], nq * 16, kk * 2);
                ldsm(sm, addr, bf, false);
                for (int l = 0; l < 32; ++l) {
                    b0[l] = bf[l][0];
                    b1[l] = bf[l][1];
                    b2[l] = bf[l][2];
                    b3[l] = bf[l][3];
                }
                for (int mt = 0; mt < MT; ++mt) {
                    mma(acc[mt][2 * nq], a[mt], b0, b1);
                    mma(acc[mt][2 * nq + 1], a[mt], b2, b3);
                }
            }
        }
    }

    void elementwise(int w, int b, int h, int m0, int n0, int st) {
        const int kw0 = w * Cfg::kWarpKeys;
        const float alibi_log2 = (kMods && p.alibi_slopes != nullptr) ? p.alibi_slopes[b * p.heads + h] * kLog2e : 0.f;
        for (int lane = 0; lane < 32; ++lane) {
            const int g = lane / 4, t = lane % 4;
            for (int nt = 0; nt < BM / 8; ++nt) {
                const float l2x = sm.ldf(sLse + (st * BM + nt * 8 + 2 * t) * 4);
                const float l2y = sm.ldf(sLse + (st * BM + nt * 8 + 2 * t + 1) * 4);
                const float d2x = sm.ldf(sDsum + (st * BM + nt * 8 + 2 * t) * 4);
                const float d2y = sm.ldf(sDsum + (st * BM + nt * 8 + 2 * t + 1) * 4);
                for (int mt = 0; mt < MT; ++mt)
                    for (int e = 0; e < 4; ++e) {
                        const float lse = e % 2 == 0 ? l2x : l2y;
                        const float dsum = e % 2 == 0 ? d2x : d2y;
                        const float dot = sT[w][mt][nt][lane][e];
                        float pr, ds;
                        if (kMods) {
                            const int rel = m0 + nt * 8 + 2 * t + e % 2 + (p.seq_k - p.seq_q) -
                                            (n0 + kw0 + mt * 16 + g + 8 * (e / 2));
                            float th, x;
                            if (p.softcap_log2 > 0.f) {
                                th = tanhf(dot * p.softcap_inv_scaled);
                                x = p.softcap_log2 * th;
                            } else {
                                th = 0.f;
                                x = dot * p.scale_log2;
                            }
                            if (alibi_log2 != 0.f) x -= alibi_log2 * fabsf(static_cast<float>(rel));
                            pr = exp2f(x - lse);
                            ds = pr * (dpt[w][mt][nt][lane][e] - dsum) * (1.f - th * th);
                        } else {
                            pr = exp2f(fmaf(dot, p.scale_log2, -lse));
                            ds = pr * (dpt[w][mt][nt][lane][e] - dsum);
                        }
                        sT[w][mt][nt][lane][e] = pr;
                        dpt[w][mt][nt][lane][e] = ds;
                    }
            }
            const bool full = m0 + BM <= p.seq_q && fattn_block_fully_visible(m0, m0 + BM - 1, n0, n0 + BN);
            if (!full) {
                for (int mt = 0; mt < MT; ++mt)
                    for (int hf = 0; hf < 2; ++hf) {
                        const RowRange rr = rows_seeing_key(p.seq_q, p.seq_k, p.window_left, p.window_right,
                                                            n0 + kw0 + mt * 16 + g + 8 * hf);
                        const int qlo = rr.lo - m0 - 2 * t;
                        const int qhi = rr.hi - m0 - 2 * t;
                        for (int nt = 0; nt < BM / 8; ++nt)
                            for (int e = 0; e < 2; ++e) {
                                const int qc = nt * 8 + e;
                                if (qc < qlo || qc >= qhi) {
                                    sT[w][mt][nt][lane][2 * hf + e] = 0.f;
                                    dpt[w][mt][nt][lane][2 * hf + e] = 0.f;
                                }
                            }
                    }
            }
        }
        for (int mt = 0; mt < MT; ++mt)
            for (int kk = 0; kk < BM / 16; ++kk)
                for (int l = 0; l < 32; ++l) {
                    auto& S = sT[w][mt];
                    auto& P = dpt[w][mt];
                    pp[w][mt][kk][l][0] = pack2(S[2 * kk][l][0], S[2 * kk][l][1]);
                    pp[w][mt][kk][l][1] = pack2(S[2 * kk][l][2], S[2 * kk][l][3]);
                    pp[w][mt][kk][l][2] = pack2(S[2 * kk + 1][l][0], S[2 * kk + 1][l][1]);
                    pp[w][mt][kk][l][3] = pack2(S[2 * kk + 1][l][2], S[2 * kk + 1][l][3]);
                    dsp[w][mt][kk][l][0] = pack2(P[2 * kk][l][0], P[2 * kk][l][1]);
                    dsp[w][mt][kk][l][1] = pack2(P[2 * kk][l][2], P[2 * kk][l][3]);
                    dsp[w][mt][kk][l][2] = pack2(P[2 * kk + 1][l][0], P[2 * kk + 1][l][1]);
                    dsp[w][mt][kk][l][3] = pack2(P[2 * kk + 1][l][2], P[2 * kk + 1][l][3]);
                }
    }

    // block_fully_visible from common/mask.cuh (device-only there), restated.
    bool fattn_block_fully_visible(int row_first, int row_last, int n0, int n1) const {
        auto range = [&](int row) {
            const int diag = row + p.seq_k - p.seq_q;
            const int lo = p.window_left < 0 ? 0 : std::max(0, diag - p.window_left);
            const int hi = p.window_right < 0 ? p.seq_k : std::min(p.seq_k, diag + p.window_right + 1);
            return std::make_pair(lo, hi);
        };
        return n1 <= p.seq_k && n0 >= range(row_last).first && n1 <= range(row_first).second;
    }

    void dkdv(int w, int d_off, int st) {
        uint32_t dO_t[32], Q_t[32];
        for (int l = 0; l < 32; ++l) {
            const uint32_t t_off = (swizzle<CPR>(pat1_row(l), pat1_chunk(l)) + d_off / 8) * 16;
            dO_t[l] = sdO + t_off + st * kTileQBytes;
            Q_t[l] = sQ + t_off + st * kTileQBytes;
        }
        for (int kk = 0; kk < BM / 16; ++kk)
            for (int dp = 0; dp < DO / 16; ++dp) {
                uint32_t addr[32], bf[32][4], b0[32], b1[32], b2[32], b3[32];
                auto split = [&]() {
                    for (int l = 0; l < 32; ++l) {
                        b0[l] = bf[l][0];
                        b1[l] = bf[l][1];
                        b2[l] = bf[l][2];
                        b3[l] = bf[l][3];
                    }
                };
                for (int l = 0; l < 32; ++l) addr[l] = frag_addr<CPR>(dO_t[l], kk * 16, dp * 2);
                ldsm(sm, addr, bf, true);
                split();
                for (int mt = 0; mt < MT; ++mt) {
                    mma(dv[w][mt][2 * dp], pp[w][mt][kk], b0, b1);
                    mma(dv[w][mt][2 * dp + 1], pp[w][mt][kk], b2, b3);
                }
                for (int l = 0; l < 32; ++l) addr[l] = frag_addr<CPR>(Q_t[l], kk * 16, dp * 2);
                ldsm(sm, addr, bf, true);
                split();
                for (int mt = 0; mt < MT; ++mt) {
                    mma(dk[w][mt][2 * dp], dsp[w][mt][kk], b0, b1);
                    mma(dk[w][mt][2 * dp + 1], dsp[w][mt][kk], b2, b3);
                }
            }
    }

    void store_ds(int w) {
        const int kw0 = w * Cfg::kWarpKeys;
        for (int l = 0; l < 32; ++l) {
            const int g = l / 4, t = l % 4;
            for (int mt = 0; mt < MT; ++mt)
                for (int kk = 0; kk < BM / 16; ++kk)
                    for (int j = 0; j < 4; ++j) {
                        const int row = kw0 + mt * 16 + g + 8 * (j & 1);
                        const int nt = 2 * kk + (j >> 1);
                        sm.st32(sdS + swizzle<CPRM>(row, nt) * 16 + t * 4, dsp[w][mt][kk][l][j]);
                    }
        }
    }

    void dq(int w, int b, int h, int m0, int d_off) {
        const int q0w = (w / Cfg::kDQWarpsN) * QR;
        const int c0w = (w % Cfg::kDQWarpsN) * QC;
        uint32_t sdS_a[QR / 16][32], sK_t[QC / 16][32];
        for (int l = 0; l < 32; ++l) {
            for (int mq = 0; mq < QR / 16; ++mq)
                sdS_a[mq][l] = sdS + swizzle<CPRM>(pat2_row(l), q0w / 8 + mq * 2 + pat2_chunk(l)) * 16;
            for (int dn = 0; dn < QC / 16; ++dn)
                sK_t[dn][l] = sK + swizzle<CPR>(pat1_row(l), (d_off + c0w) / 8 + dn * 2 + pat1_chunk(l)) * 16;
        }
        static float acc[QR / 16][QC / 8][32][4];
        memset(acc, 0, sizeof(acc));
        for (int kk = 0; kk < BN / 16; ++kk) {
            uint32_t af[QR / 16][32][4];
            for (int mq = 0; mq < QR / 16; ++mq) {
                uint32_t addr[32];
                for (int l = 0; l < 32; ++l) addr[l] = sdS_a[mq][l] + kk * 16 * CPRM * 16;
                ldsm(sm, addr, af[mq], true);
            }
            for (int dn = 0; dn < QC / 16; ++dn) {
                uint32_t addr[32], bf[32][4], b0[32], b1[32], b2[32], b3[32];
                for (int l = 0; l < 32; ++l) addr[l] = sK_t[dn][l] + kk * 16 * CPR * 16;
                ldsm(sm, addr, bf, true);
                for (int l = 0; l < 32; ++l) {
                    b0[l] = bf[l][0];
                    b1[l] = bf[l][1];
                    b2[l] = bf[l][2];
                    b3[l] = bf[l][3];
                }
                for (int mq = 0; mq < QR / 16; ++mq) {
                    mma(acc[mq][2 * dn], af[mq], b0, b1);
                    mma(acc[mq][2 * dn + 1], af[mq], b2, b3);
                }
            }
        }
        const int row0 = m0 + q0w;
        float* dqa = bp.dq_accum + ((static_cast<int64_t>(b) * p.heads + h) * bp.seq_q_pad + row0) * bp.head_dim_inst +
                     d_off + c0w;
        for (int l = 0; l < 32; ++l) {
            const int g = l / 4, t = l % 4;
            for (int mq = 0; mq < QR / 16; ++mq)
                for (int hf = 0; hf < 2; ++hf) {
                    const int r = mq * 16 + g + 8 * hf;
                    if (row0 + r >= p.seq_q) continue;
                    float* dst = dqa + static_cast<int64_t>(r) * bp.head_dim_inst + 2 * t;
                    for (int dt = 0; dt < QC / 8; ++dt) {
                        dst[dt * 8] += acc[mq][dt][l][2 * hf];
                        dst[dt * 8 + 1] += acc[mq][dt][l][2 * hf + 1];
                    }
                }
        }
    }

    void run(int block) {
        const BwdCta cta = bwd_cta(block, p.seq_q, p.seq_k, p.kv_heads, p.kv_group, p.window_left, p.window_right,
                                   bp.kv_splits, bp.heads_per_split, BN, BM, Cfg::kDSplits, DO);
        const int b = cta.b, n0 = cta.n0, d_off = cta.d_off, nm = cta.nm, items = cta.items;
        memset(dk, 0, sizeof(dk));
        memset(dv, 0, sizeof(dv));
        if (items > 0) {
            const uint16_t* kg = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride + cta.kvh * p.k_head_stride;
            const uint16_t* vg = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride + cta.kvh * p.v_head_stride;
            const int m_first = cta.mb_begin * BM;
            const int m_end = (cta.mb_begin + nm) * BM;
            load_tile(sK, kg, p.k_seq_stride, n0, p.seq_k, BN);
            load_tile(sV, vg, p.v_seq_stride, n0, p.seq_k, BN);
            cp.commit();
            load_do(b, cta.h_first, m_first, 0);
            cp.commit();
            load_q(b, cta.h_first, m_first, 0);
            cp.commit();
            if (Cfg::kKVInRegs) {
                cp.wait(sm, 2);  // + barrier
                for (int w = 0; w < W; ++w) {
                    const int kw0 = w * Cfg::kWarpKeys;
                    for (int mt = 0; mt < MT; ++mt)
                        for (int kk = 0; kk < kKVRegSteps; ++kk) {
                            uint32_t addr_k[32], addr_v[32];
                            for (int l = 0; l < 32; ++l) {
                                const uint32_t a_off = (kw0 * CPR + swizzle<CPR>(pat1_row(l), pat1_chunk(l))) * 16;
                                addr_k[l] = frag_addr<CPR>(sK + a_off, mt * 16, kk * 2);
                                addr_v[l] = frag_addr<CPR>(sV + a_off, mt * 16, kk * 2);
                            }
                            ldsm(sm, addr_k, kfr[w][mt][kk], false);
                            ldsm(sm, addr_v, vfr[w][mt][kk], false);
                        }
                }
            }
            int h = cta.h_first, m0 = m_first;
            for (int it = 0; it < items; ++it) {
                const int st = ST == 2 ? (it & 1) : 0;
                const bool has_next = it + 1 < items;
                const bool next_head = m0 + BM == m_end;
                const int h_next = next_head ? h + 1 : h;
                const int m0_next = next_head ? m_first : m0 + BM;
                if (ST == 2) {
                    cp.wait(sm, 0);  // + barrier
                    if (has_next) {
                        load_do(b, h_next, m0_next, st ^ 1);
                        load_q(b, h_next, m0_next, st ^ 1);
                    }
                    cp.commit();
                    for (int w = 0; w < W; ++w) {
                        gemm_rows_t(w, dpt[w], sV, vfr[w], sdO + st * kTileQBytes);
                        gemm_rows_t(w, sT[w], sK, kfr[w], sQ + st * kTileQBytes);
                        elementwise(w, b, h, m0, n0, st);
                        dkdv(w, d_off, st);
                        store_ds(w);
                    }
                    // barrier
                    for (int w = 0; w < W; ++w) dq(w, b, h, m0, d_off);
                } else {
                    cp.wait(sm, 1);  // + barrier
                    for (int w = 0; w < W; ++w) gemm_rows_t(w, dpt[w], sV, vfr[w], sdO);
                    cp.wait(sm, 0);  // + barrier
                    for (int w = 0; w < W; ++w) {
                        gemm_rows_t(w, sT[w], sK, kfr[w], sQ);
                        elementwise(w, b, h, m0, n0, 0);
                        dkdv(w, d_off, 0);
                        if (!Cfg::kDSInQ) store_ds(w);
                    }
                    // barrier
                    if (Cfg::kDSInQ) {
                        if (has_next) load_do(b, h_next, m0_next, 0);
                        cp.commit();
                        for (int w = 0; w < W; ++w) store_ds(w);
                        // barrier
                        for (int w = 0; w < W; ++w) dq(w, b, h, m0, d_off);
                        // barrier
                        if (has_next) load_q(b, h_next, m0_next, 0);
                        cp.commit();
                    } else {
                        if (has_next) load_do(b, h_next, m0_next, 0);
                        cp.commit();
                        if (has_next) load_q(b, h_next, m0_next, 0);
                        cp.commit();
                        for (int w = 0; w < W; ++w) dq(w, b, h, m0, d_off);
                    }
                }
                h = h_next;
                m0 = m0_next;
            }
            cp.wait(sm, 0);
        }
        // Epilogue.
        const int kvh = cta.kvh;
        if (bp.dk_accum != nullptr && items == 0) return;
        for (int w = 0; w < W; ++w) {
            const int kw0 = w * Cfg::kWarpKeys;
            for (int l = 0; l < 32; ++l) {
                const int g = l / 4, t = l % 4;
                for (int mt = 0; mt < MT; ++mt)
                    for (int hf = 0; hf < 2; ++hf)
                        for (int dt = 0; dt < DO / 8; ++dt)
                            for (int e = 0; e < 2; ++e) {
                                const float kx = dk[w][mt][dt][l][2 * hf + e] * p.scale;
                                const float vx = dv[w][mt][dt][l][2 * hf + e];
                                const int key = n0 + kw0 + mt * 16 + g + 8 * hf;
                                const int col = d_off + dt * 8 + 2 * t + e;
                                if (bp.dk_accum != nullptr) {
                                    const int64_t at =
                                        ((static_cast<int64_t>(b) * p.kv_heads + kvh) * bp.seq_k_pad + key) *
                                            bp.head_dim_inst +
                                        col;
                                    bp.dk_accum[at] += kx;
                                    bp.dv_accum[at] += vx;
                                } else if (key < p.seq_k && col < p.head_dim) {
                                    const int64_t at =
                                        ((static_cast<int64_t>(b) * p.seq_k + key) * p.kv_heads + kvh) * p.head_dim + col;
                                    static_cast<uint16_t*>(bp.dk)[at] = f2bf(kx);
                                    static_cast<uint16_t*>(bp.dv)[at] = f2bf(vx);
                                }
                            }
            }
        }
    }
};

// Runs one case through the replay and the f64 reference; returns the worst relative error.
// The f64 forward (O, lse) and backward (dq, dk, dv) on dense (batch, seq, heads, head_dim)
// inputs.
static void reference(const Case& c, const std::vector<double>& qf, const std::vector<double>& kf,
                      const std::vector<double>& vf, const std::vector<double>& of_do, const std::vector<float>& alibi,
                      std::vector<double>& o, std::vector<float>& lse, std::vector<double>& rdq,
                      std::vector<double>& rdk, std::vector<double>& rdv) {
    const size_t nq = static_cast<size_t>(c.batch) * c.seq_q * c.heads * c.head_dim;
    const size_t nk = static_cast<size_t>(c.batch) * c.seq_k * c.kv_heads * c.head_dim;
    const int group = c.heads / c.kv_heads;
    o.assign(nq, 0);
    rdq.assign(nq, 0);
    rdk.assign(nk, 0);
    rdv.assign(nk, 0);
    lse.assign(static_cast<size_t>(c.batch) * c.heads * c.seq_q, 0.f);
    for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads; ++h) {
            const int kvh = h / group;
            for (int i = 0; i < c.seq_q; ++i) {
                std::vector<double> s(c.seq_k), th(c.seq_k), pr(c.seq_k, 0);
                double mx = -INFINITY;
                for (int j = 0; j < c.seq_k; ++j)
                    if (visible(c, i, j)) {
                        s[j] = ref_score(c, qf, kf, b, h, i, j, alibi, &th[j]);
                        mx = std::max(mx, s[j]);
                    }
                double sum = 0;
                for (int j = 0; j < c.seq_k; ++j)
                    if (visible(c, i, j)) sum += std::exp(s[j] - mx);
                const double l = sum > 0 ? mx + std::log(sum) : -INFINITY;
                lse[(static_cast<size_t>(b) * c.heads + h) * c.seq_q + i] = static_cast<float>(l);
                const size_t qrow = ((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h) * c.head_dim;
                for (int j = 0; j < c.seq_k; ++j)
                    if (visible(c, i, j)) pr[j] = std::exp(s[j] - l);
                for (int x = 0; x < c.head_dim; ++x) {
                    double acc = 0;
                    for (int j = 0; j < c.seq_k; ++j)
                        acc += pr[j] * vf[((static_cast<size_t>(b) * c.seq_k + j) * c.kv_heads + kvh) * c.head_dim + x];
                    o[qrow + x] = acc;
                }
                double dsum = 0;
                for (int x = 0; x < c.head_dim; ++x) dsum += of_do[qrow + x] * o[qrow + x];
                for (int j = 0; j < c.seq_k; ++j) {
                    if (!visible(c, i, j)) continue;
                    const size_t krow = ((static_cast<size_t>(b) * c.seq_k + j) * c.kv_heads + kvh) * c.head_dim;
                    double dp = 0;
                    for (int x = 0; x < c.head_dim; ++x) dp += of_do[qrow + x] * vf[krow + x];
                    double ds = pr[j] * (dp - dsum);
                    if (c.softcap > 0) ds *= 1 - th[j] * th[j];
                    for (int x = 0; x < c.head_dim; ++x) {
                        rdv[krow + x] += pr[j] * of_do[qrow + x];
                        rdk[krow + x] += c.scale * ds * qf[qrow + x];
                        rdq[qrow + x] += c.scale * ds * kf[krow + x];
                    }
                }
            }
        }

}

// Worst |got - want| relative to max |want|; non-finite values fail. `tol`: the dtype's bar.
static bool check_err(const std::vector<double>& got, const std::vector<double>& want, const char* what, double tol) {
    double worst = 0, scale = 1e-6;
    size_t nan = 0;
    for (size_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::fabs(want[i]));
    for (size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(got[i])) {
            ++nan;
            continue;
        }
        worst = std::max(worst, std::fabs(got[i] - want[i]) / scale);
    }
    const bool good = nan == 0 && worst < tol;
    printf("  %s: max rel err %.2e%s", what, worst, nan ? " NON-FINITE" : "");
    if (nan) printf(" (%zu)", nan);
    printf("%s", good ? "" : " <-- FAIL");
    return good;
}

// Replays instance kInst's tile Cfg (BwdTraits<kInst>, or its large-smem tile
// BwdTraitsLarge<kInst>: run_case_large).
template <int kInst, bool kMods, class Cfg = BwdTraits<kInst>>
static bool run_case(const Case& c, std::mt19937& rng) {
    const int row_len = c.head_dim + c.q_row_pad;
    const int group = c.heads / c.kv_heads;
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& t, size_t n) {
        t.assign(n, 0);
        for (auto& x : t) x = f2bf(nd(rng));
    };
    std::vector<uint16_t> q, k, v, d_o;
    fill(q, static_cast<size_t>(c.batch) * c.seq_q * c.heads * row_len);
    fill(k, static_cast<size_t>(c.batch) * c.seq_k * c.kv_heads * row_len);
    fill(v, static_cast<size_t>(c.batch) * c.seq_k * c.kv_heads * row_len);
    fill(d_o, static_cast<size_t>(c.batch) * c.seq_q * c.heads * row_len);
    std::vector<float> alibi(c.batch * c.heads);
    for (auto& x : alibi) x = 0.05f + 0.3f * std::uniform_real_distribution<float>(0, 1)(rng);

    // Dense f64 copies (head_dim columns) for the reference.
    auto dense = [&](const std::vector<uint16_t>& t, int seq, int hh) {
        std::vector<double> out(static_cast<size_t>(c.batch) * seq * hh * c.head_dim);
        for (size_t r = 0; r < out.size() / c.head_dim; ++r)
            for (int x = 0; x < c.head_dim; ++x) out[r * c.head_dim + x] = bf2f(t[r * row_len + x]);
        return out;
    };
    const auto qf = dense(q, c.seq_q, c.heads), kf = dense(k, c.seq_k, c.kv_heads);
    const auto vf = dense(v, c.seq_k, c.kv_heads), of_do = dense(d_o, c.seq_q, c.heads);

    // Reference forward and backward in f64.
    const size_t nq = static_cast<size_t>(c.batch) * c.seq_q * c.heads * c.head_dim;
    const size_t nk = static_cast<size_t>(c.batch) * c.seq_k * c.kv_heads * c.head_dim;
    std::vector<double> o, rdq, rdk, rdv;
    std::vector<float> lse;
    reference(c, qf, kf, vf, of_do, alibi, o, lse, rdq, rdk, rdv);
    std::vector<uint16_t> o_bf(nq);
    for (size_t i = 0; i < nq; ++i) o_bf[i] = f2bf(static_cast<float>(o[i]));

    // The launch side (src/cuda/backward.rs) and the preprocess, replayed.
    const int seq_q_pad = (c.seq_q + 127) / 128 * 128;
    const int nkb = (c.seq_k + Cfg::kBlockN - 1) / Cfg::kBlockN;
    const int seq_k_pad = nkb * Cfg::kBlockN;
    const int d_inst = kInst;
    const size_t stat_rows = static_cast<size_t>(c.batch) * c.heads * seq_q_pad;
    std::vector<float> dsum(stat_rows), lse2(stat_rows);
    for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads; ++h)
            for (int i = 0; i < seq_q_pad; ++i) {
                const size_t row = (static_cast<size_t>(b) * c.heads + h) * seq_q_pad + i;
                float acc = 0.f, l2 = INFINITY;
                if (i < c.seq_q) {
                    const size_t qrow = ((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h);
                    for (int x = 0; x < c.head_dim; ++x)
                        acc = fmaf(bf2f(o_bf[qrow * c.head_dim + x]), bf2f(d_o[qrow * row_len + x]), acc);
                    const float l = lse[(static_cast<size_t>(b) * c.heads + h) * c.seq_q + i];
                    l2 = l == -INFINITY ? INFINITY : l * kLog2e;
                }
                dsum[row] = acc;
                lse2[row] = l2;
            }
    std::vector<float> dq_accum(stat_rows * d_inst, 0.f);
    std::vector<float> dkv_accum(c.kv_splits > 1 ? 2 * static_cast<size_t>(c.batch) * c.kv_heads * seq_k_pad * d_inst : 0,
                                 0.f);
    std::vector<uint16_t> dk_out(nk, 0xffff), dv_out(nk, 0xffff);  // NaN: every element must be written

    FattnBwdParams bp{};
    FattnParams& f = bp.fwd;
    f.q = q.data();
    f.k = k.data();
    f.v = v.data();
    f.alibi_slopes = c.alibi ? alibi.data() : nullptr;
    f.q_seq_stride = static_cast<int64_t>(c.heads) * row_len;
    f.q_batch_stride = f.q_seq_stride * c.seq_q;
    f.q_head_stride = row_len;
    f.k_seq_stride = static_cast<int64_t>(c.kv_heads) * row_len;
    f.k_batch_stride = f.k_seq_stride * c.seq_k;
    f.k_head_stride = row_len;
    f.v_seq_stride = f.k_seq_stride;
    f.v_batch_stride = f.k_batch_stride;
    f.v_head_stride = row_len;
    f.batch = c.batch;
    f.heads = c.heads;
    f.kv_heads = c.kv_heads;
    f.seq_q = c.seq_q;
    f.seq_k = c.seq_k;
    f.head_dim = c.head_dim;
    f.kv_group = group;
    f.window_left = c.window_left;
    f.window_right = c.window_right;
    f.scale_log2 = c.scale * kLog2e;
    f.softcap_inv_scaled = c.softcap > 0 ? c.scale / c.softcap : 0.f;
    f.softcap_log2 = c.softcap > 0 ? c.softcap * kLog2e : 0.f;
    bp.d_o = d_o.data();
    bp.do_seq_stride = f.q_seq_stride;
    bp.do_batch_stride = f.q_batch_stride;
    bp.do_head_stride = row_len;
    bp.dsum = dsum.data();
    bp.lse_log2 = lse2.data();
    bp.dq_accum = dq_accum.data();
    bp.dk_accum = c.kv_splits > 1 ? dkv_accum.data() : nullptr;
    bp.dv_accum = c.kv_splits > 1 ? dkv_accum.data() + dkv_accum.size() / 2 : nullptr;
    bp.dk = dk_out.data();
    bp.dv = dv_out.data();
    bp.seq_q_pad = seq_q_pad;
    bp.seq_k_pad = seq_k_pad;
    bp.head_dim_inst = d_inst;
    bp.kv_splits = c.kv_splits;
    bp.heads_per_split = group / c.kv_splits;
    f.scale = c.scale;

    const int grid = nkb * Cfg::kDSplits * c.kv_splits * c.kv_heads * c.batch;
    auto* replay = new Replay<Cfg, kMods>(bp);
    for (int block = 0; block < grid; ++block) {
        replay->sm = Smem(Cfg::kSmemBytes);
        replay->cp = CpAsync();
        replay->run(block);
    }
    delete replay;

    // Convert, replayed.
    std::vector<double> gdq(nq), gdk(nk), gdv(nk);
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.seq_q; ++i)
            for (int h = 0; h < c.heads; ++h)
                for (int x = 0; x < c.head_dim; ++x)
                    gdq[((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h) * c.head_dim + x] = bf2f(f2bf(
                        dq_accum[((static_cast<size_t>(b) * c.heads + h) * seq_q_pad + i) * d_inst + x] * c.scale));
    for (int b = 0; b < c.batch; ++b)
        for (int j = 0; j < c.seq_k; ++j)
            for (int h = 0; h < c.kv_heads; ++h)
                for (int x = 0; x < c.head_dim; ++x) {
                    const size_t at = ((static_cast<size_t>(b) * c.seq_k + j) * c.kv_heads + h) * c.head_dim + x;
                    if (c.kv_splits > 1) {
                        const size_t src = ((static_cast<size_t>(b) * c.kv_heads + h) * seq_k_pad + j) * d_inst + x;
                        gdk[at] = bf2f(f2bf(dkv_accum[src]));
                        gdv[at] = bf2f(f2bf(dkv_accum[dkv_accum.size() / 2 + src]));
                    } else {
                        gdk[at] = bf2f(dk_out[at]);
                        gdv[at] = bf2f(dv_out[at]);
                    }
                }

    bool ok = true;
    printf("%-44s", c.name.c_str());
    // bf16 inputs to every mma (P and dS rounded to bf16): ~1% of the largest gradient.
    ok &= check_err(gdq, rdq, "dq", 3e-2);
    ok &= check_err(gdk, rdk, "dk", 3e-2);
    ok &= check_err(gdv, rdv, "dv", 3e-2);
    printf("\n");
    return ok;
}


// ---- the f32 kernel, replayed thread by thread between its barriers ----------------------

static void replay_f32(const FattnBwdParams& bp, int block) {
    namespace F = fattn::bwd::f32;
    using C = F::Cfg<256>;  // the d <= 256 instance: 16 x 16 tiles, one thread per pair
    const FattnParams& p = bp.fwd;
    const int D = p.head_dim;
    const int KS = F::k_stride(D);
    std::vector<float> smem(F::smem_floats(C::kBlock, D), NAN);
    float* sK = smem.data();
    float* sV = sK + C::kBlockN * KS;
    float* sQ = sV + C::kBlockN * KS;
    float* sdO = sQ + C::kBlockM * D;
    float* sP = sdO + C::kBlockM * D;
    float* sdS = sP + C::kBlockM * (C::kBlockN + 1);
    float* sLse = sdS + C::kBlockM * (C::kBlockN + 1);
    float* sDsum = sLse + C::kBlockM;
    const BwdCta cta = bwd_cta(block, p.seq_q, p.seq_k, p.kv_heads, p.kv_group, p.window_left, p.window_right,
                               bp.kv_splits, bp.heads_per_split, C::kBlockN, C::kBlockM, 1, D);
    const int b = cta.b, kvh = cta.kvh, n0 = cta.n0;
    static float dk[F::kThreads][F::kMaxColsPerThread], dv[F::kThreads][F::kMaxColsPerThread];
    memset(dk, 0, sizeof(dk));
    memset(dv, 0, sizeof(dv));
    if (cta.items > 0) {
        const float* kg = static_cast<const float*>(p.k) + b * p.k_batch_stride + kvh * p.k_head_stride;
        const float* vg = static_cast<const float*>(p.v) + b * p.v_batch_stride + kvh * p.v_head_stride;
        for (int tid = 0; tid < F::kThreads; ++tid)
            for (int idx = tid; idx < C::kBlockN * D; idx += F::kThreads) {
                const int rr = idx / D, c = idx - (idx / D) * D;
                const bool ok = n0 + rr < p.seq_k;
                sK[rr * KS + c] = ok ? kg[static_cast<int64_t>(n0 + rr) * p.k_seq_stride + c] : 0.f;
                sV[rr * KS + c] = ok ? vg[static_cast<int64_t>(n0 + rr) * p.v_seq_stride + c] : 0.f;
            }
        for (int it = 0; it < cta.items; ++it) {
            const int h = cta.h_first + it / cta.nm;
            const int m0 = (cta.mb_begin + it % cta.nm) * C::kBlockM;
            // barrier
            const float* qg = static_cast<const float*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
            const float* dog = static_cast<const float*>(bp.d_o) + b * bp.do_batch_stride + h * bp.do_head_stride;
            for (int tid = 0; tid < F::kThreads; ++tid) {
                for (int idx = tid; idx < C::kBlockM * D; idx += F::kThreads) {
                    const int rr = idx / D, c = idx - (idx / D) * D;
                    const bool ok = m0 + rr < p.seq_q;
                    sQ[idx] = ok ? qg[static_cast<int64_t>(m0 + rr) * p.q_seq_stride + c] : 0.f;
                    sdO[idx] = ok ? dog[static_cast<int64_t>(m0 + rr) * bp.do_seq_stride + c] : 0.f;
                }
                const int64_t stat_row = (static_cast<int64_t>(b) * p.heads + h) * bp.seq_q_pad + m0;
                if (tid < C::kBlockM) {
                    sLse[tid] = bp.lse_log2[stat_row + tid];
                    sDsum[tid] = bp.dsum[stat_row + tid];
                }
            }
            // barrier: phase A
            for (int tid = 0; tid < F::kThreads; ++tid) {
                const int pi = tid / C::kBlockN, pj = tid % C::kBlockN;
                const int key = n0 + pj;
                const RowRange vis = rows_seeing_key(p.seq_q, p.seq_k, p.window_left, p.window_right, key);
                float dot = 0.f, dp = 0.f;
                for (int c = 0; c < D; ++c) {
                    dot = fmaf(sQ[pi * D + c], sK[pj * KS + c], dot);
                    dp = fmaf(sdO[pi * D + c], sV[pj * KS + c], dp);
                }
                const int row = m0 + pi;
                float pr = 0.f, ds = 0.f;
                if (row >= vis.lo && row < vis.hi) {
                    const float alibi_log2 = p.alibi_slopes != nullptr ? p.alibi_slopes[b * p.heads + h] * kLog2e : 0.f;
                    float th = 0.f, x;
                    if (p.softcap_log2 > 0.f) {
                        th = tanhf(dot * p.softcap_inv_scaled);
                        x = p.softcap_log2 * th;
                    } else {
                        x = dot * p.scale_log2;
                    }
                    const int rel = row + (p.seq_k - p.seq_q) - key;
                    if (alibi_log2 != 0.f) x -= alibi_log2 * fabsf(static_cast<float>(rel));
                    pr = exp2f(x - sLse[pi]);
                    ds = pr * (dp - sDsum[pi]) * (1.f - th * th);
                }
                sP[pi * (C::kBlockN + 1) + pj] = pr;
                sdS[pi * (C::kBlockN + 1) + pj] = ds;
            }
            // barrier: phases B and C
            for (int tid = 0; tid < F::kThreads; ++tid) {
                const int r = tid / 16, cg = tid % 16;
                for (int i = 0; i < C::kBlockM; ++i) {
                    const float pv = sP[i * (C::kBlockN + 1) + r];
                    const float dsv = sdS[i * (C::kBlockN + 1) + r];
                    for (int u = 0; u < F::kMaxColsPerThread; ++u) {
                        const int c = cg + 16 * u;
                        if (c < D) {
                            dv[tid][u] = fmaf(pv, sdO[i * D + c], dv[tid][u]);
                            dk[tid][u] = fmaf(dsv, sQ[i * D + c], dk[tid][u]);
                        }
                    }
                }
                if (m0 + r < p.seq_q) {
                    float* dqa = bp.dq_accum +
                                 ((static_cast<int64_t>(b) * p.heads + h) * bp.seq_q_pad + m0 + r) * bp.head_dim_inst;
                    for (int u = 0; u < F::kMaxColsPerThread; ++u) {
                        const int c = cg + 16 * u;
                        if (c < D) {
                            float acc = 0.f;
                            for (int j = 0; j < C::kBlockN; ++j)
                                acc = fmaf(sdS[r * (C::kBlockN + 1) + j], sK[j * KS + c], acc);
                            dqa[c] += acc;
                        }
                    }
                }
            }
        }
    }
    for (int tid = 0; tid < F::kThreads; ++tid) {
        const int r = tid / 16, cg = tid % 16;
        const int key = n0 + r;
        if (bp.dk_accum != nullptr) {
            if (cta.items == 0) return;
            const int64_t row = ((static_cast<int64_t>(b) * p.kv_heads + kvh) * bp.seq_k_pad + key) * bp.head_dim_inst;
            for (int u = 0; u < F::kMaxColsPerThread; ++u) {
                const int c = cg + 16 * u;
                if (c < D) {
                    bp.dk_accum[row + c] += dk[tid][u] * p.scale;
                    bp.dv_accum[row + c] += dv[tid][u];
                }
            }
            continue;
        }
        if (key >= p.seq_k) continue;
        const int64_t row = ((static_cast<int64_t>(b) * p.seq_k + key) * p.kv_heads + kvh) * D;
        for (int u = 0; u < F::kMaxColsPerThread; ++u) {
            const int c = cg + 16 * u;
            if (c < D) {
                static_cast<float*>(bp.dk)[row + c] = dk[tid][u] * p.scale;
                static_cast<float*>(bp.dv)[row + c] = dv[tid][u];
            }
        }
    }
}

static bool run_case_f32(const Case& c, std::mt19937& rng) {
    const int group = c.heads / c.kv_heads;
    std::normal_distribution<float> nd(0.f, 1.f);
    const size_t nq = static_cast<size_t>(c.batch) * c.seq_q * c.heads * c.head_dim;
    const size_t nk = static_cast<size_t>(c.batch) * c.seq_k * c.kv_heads * c.head_dim;
    std::vector<float> q(nq), k(nk), v(nk), d_o(nq), alibi(c.batch * c.heads);
    for (auto* t : {&q, &k, &v, &d_o})
        for (auto& x : *t) x = nd(rng);
    for (auto& x : alibi) x = 0.05f + 0.3f * std::uniform_real_distribution<float>(0, 1)(rng);
    auto to64 = [](const std::vector<float>& t) { return std::vector<double>(t.begin(), t.end()); };
    std::vector<double> o, rdq, rdk, rdv;
    std::vector<float> lse;
    reference(c, to64(q), to64(k), to64(v), to64(d_o), alibi, o, lse, rdq, rdk, rdv);

    const int seq_q_pad = (c.seq_q + 127) / 128 * 128;
    const int nkb = (c.seq_k + fattn::bwd::f32::Cfg<256>::kBlockN - 1) / fattn::bwd::f32::Cfg<256>::kBlockN;
    const int seq_k_pad = nkb * fattn::bwd::f32::Cfg<256>::kBlockN;
    const size_t stat_rows = static_cast<size_t>(c.batch) * c.heads * seq_q_pad;
    std::vector<float> dsum(stat_rows), lse2(stat_rows);
    for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads; ++h)
            for (int i = 0; i < seq_q_pad; ++i) {
                const size_t row = (static_cast<size_t>(b) * c.heads + h) * seq_q_pad + i;
                float acc = 0.f, l2 = INFINITY;
                if (i < c.seq_q) {
                    const size_t qrow = ((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h) * c.head_dim;
                    for (int x = 0; x < c.head_dim; ++x) acc = fmaf(static_cast<float>(o[qrow + x]), d_o[qrow + x], acc);
                    const float l = lse[(static_cast<size_t>(b) * c.heads + h) * c.seq_q + i];
                    l2 = l == -INFINITY ? INFINITY : l * kLog2e;
                }
                dsum[row] = acc;
                lse2[row] = l2;
            }
    std::vector<float> dq_accum(stat_rows * c.head_dim, 0.f);
    const size_t dkv_words = static_cast<size_t>(c.batch) * c.kv_heads * seq_k_pad * c.head_dim;
    std::vector<float> dkv_accum(c.kv_splits > 1 ? 2 * dkv_words : 0, 0.f);
    std::vector<float> dk_out(nk, NAN), dv_out(nk, NAN);

    FattnBwdParams bp{};
    FattnParams& f = bp.fwd;
    f.q = q.data();
    f.k = k.data();
    f.v = v.data();
    f.alibi_slopes = c.alibi ? alibi.data() : nullptr;
    f.q_head_stride = c.head_dim;
    f.q_seq_stride = static_cast<int64_t>(c.heads) * c.head_dim;
    f.q_batch_stride = f.q_seq_stride * c.seq_q;
    f.k_head_stride = f.v_head_stride = c.head_dim;
    f.k_seq_stride = f.v_seq_stride = static_cast<int64_t>(c.kv_heads) * c.head_dim;
    f.k_batch_stride = f.v_batch_stride = f.k_seq_stride * c.seq_k;
    f.batch = c.batch;
    f.heads = c.heads;
    f.kv_heads = c.kv_heads;
    f.seq_q = c.seq_q;
    f.seq_k = c.seq_k;
    f.head_dim = c.head_dim;
    f.kv_group = group;
    f.window_left = c.window_left;
    f.window_right = c.window_right;
    f.scale_log2 = c.scale * kLog2e;
    f.softcap_inv_scaled = c.softcap > 0 ? c.scale / c.softcap : 0.f;
    f.softcap_log2 = c.softcap > 0 ? c.softcap * kLog2e : 0.f;
    bp.d_o = d_o.data();
    bp.do_head_stride = c.head_dim;
    bp.do_seq_stride = f.q_seq_stride;
    bp.do_batch_stride = f.q_batch_stride;
    bp.dsum = dsum.data();
    bp.lse_log2 = lse2.data();
    bp.dq_accum = dq_accum.data();
    bp.dk_accum = c.kv_splits > 1 ? dkv_accum.data() : nullptr;
    bp.dv_accum = c.kv_splits > 1 ? dkv_accum.data() + dkv_words : nullptr;
    bp.dk = dk_out.data();
    bp.dv = dv_out.data();
    bp.seq_q_pad = seq_q_pad;
    bp.seq_k_pad = seq_k_pad;
    bp.head_dim_inst = c.head_dim;
    bp.kv_splits = c.kv_splits;
    bp.heads_per_split = group / c.kv_splits;
    f.scale = c.scale;
    const int grid = nkb * c.kv_splits * c.kv_heads * c.batch;
    for (int block = 0; block < grid; ++block) replay_f32(bp, block);

    std::vector<double> gdq(nq), gdk(nk), gdv(nk);
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.seq_q; ++i)
            for (int h = 0; h < c.heads; ++h)
                for (int x = 0; x < c.head_dim; ++x)
                    gdq[((static_cast<size_t>(b) * c.seq_q + i) * c.heads + h) * c.head_dim + x] =
                        dq_accum[((static_cast<size_t>(b) * c.heads + h) * seq_q_pad + i) * c.head_dim + x] * c.scale;
    for (int b = 0; b < c.batch; ++b)
        for (int j = 0; j < c.seq_k; ++j)
            for (int h = 0; h < c.kv_heads; ++h)
                for (int x = 0; x < c.head_dim; ++x) {
                    const size_t at = ((static_cast<size_t>(b) * c.seq_k + j) * c.kv_heads + h) * c.head_dim + x;
                    const size_t src = ((static_cast<size_t>(b) * c.kv_heads + h) * seq_k_pad + j) * c.head_dim + x;
                    gdk[at] = c.kv_splits > 1 ? dkv_accum[src] : dk_out[at];
                    gdv[at] = c.kv_splits > 1 ? dkv_accum[dkv_words + src] : dv_out[at];
                }
    bool ok = true;
    printf("%-44s", ("f32 " + c.name).c_str());
    // f32 throughout (the forward's O is f64 here): rounding only.
    ok &= check_err(gdq, rdq, "dq", 1e-4);
    ok &= check_err(gdk, rdk, "dk", 1e-4);
    ok &= check_err(gdv, rdv, "dv", 1e-4);
    printf("\n");
    return ok;
}

// Every thread→chunk mapping of load_tile's 16-byte path writes each chunk of a tile once.
template <int kThreads, int CPR, int kRows>
static bool load_tile_covers() {
    std::vector<int> hits(kRows * CPR, 0);
    if constexpr (kThreads % CPR == 0) {
        constexpr int kStep = kThreads / CPR;
        for (int tid = 0; tid < kThreads; ++tid)
            for (int i = 0; i < (kRows + kStep - 1) / kStep; ++i) {
                const int r = tid / CPR + i * kStep;
                if (kRows % kStep != 0 && r >= kRows) break;
                ++hits[r * CPR + tid % CPR];
            }
    } else {
        for (int tid = 0; tid < kThreads; ++tid)
            for (int chunk = tid; chunk < kRows * CPR; chunk += kThreads) ++hits[chunk];
    }
    for (int h : hits)
        if (h != 1) return false;
    return true;
}
template <int D>
static bool tiles_cover() {
    using C = BwdTraits<D>;
    return load_tile_covers<C::kThreads, C::kCPR, C::kBlockM>() && load_tile_covers<C::kThreads, C::kCPR, C::kBlockN>();
}

// rows_seeing_key against the definition (fattn::key_range), and bwd_cta's block ranges
// against every key of the block, over small shapes and every window kind.
static bool ranges_check() {
    bool ok = true;
    for (int sq = 1; sq <= 40; sq += 3)
        for (int sk = 1; sk <= 40; sk += 5)
            for (int wl = -1; wl <= 6; wl += 2)
                for (int wr = -1; wr <= 6; wr += 3) {
                    Case c{"", 1, 1, 1, sq, sk, 8, 1, 0, wl, wr, false, 1, 0};
                    for (int j = -1; j <= sk; ++j) {
                        const RowRange r = rows_seeing_key(sq, sk, wl, wr, j);
                        for (int i = 0; i < sq; ++i) {
                            const bool in = i >= r.lo && i < r.hi;
                            const bool want = j >= 0 && j < sk && visible(c, i, j);
                            if (in != want) {
                                printf("rows_seeing_key(sq %d sk %d wl %d wr %d j %d) = [%d,%d) wrong at row %d\n", sq,
                                       sk, wl, wr, j, r.lo, r.hi, i);
                                ok = false;
                            }
                        }
                    }
                    for (int bn : {4, 16}) {
                        const int nkb = (sk + bn - 1) / bn;
                        for (int kb = 0; kb < nkb; ++kb) {
                            const BwdCta cta = bwd_cta(kb, sq, sk, 1, 1, wl, wr, 1, 1, bn, 8, 1, 8);
                            for (int i = 0; i < sq; ++i) {
                                bool sees = false;
                                for (int j = kb * bn; j < std::min(sk, kb * bn + bn); ++j) sees |= visible(c, i, j);
                                const bool covered = i >= cta.mb_begin * 8 && i < (cta.mb_begin + cta.nm) * 8;
                                if (sees && !covered) {
                                    printf("bwd_cta misses row %d for key block %d (sq %d sk %d wl %d wr %d)\n", i, kb,
                                           sq, sk, wl, wr);
                                    ok = false;
                                }
                            }
                            // No block is visited that no row of it sees.
                            for (int mb = cta.mb_begin; mb < cta.mb_begin + cta.nm; ++mb) {
                                bool any = false;
                                for (int i = mb * 8; i < std::min(sq, mb * 8 + 8); ++i)
                                    for (int j = kb * bn; j < std::min(sk, kb * bn + bn); ++j) any |= visible(c, i, j);
                                if (!any) {
                                    printf("bwd_cta visits query block %d that sees nothing of key block %d (sq %d sk %d "
                                           "wl %d wr %d)\n",
                                           mb, kb, sq, sk, wl, wr);
                                    ok = false;
                                }
                            }
                        }
                    }
                }
    return ok;
}

int main() {
    bool ok = true;
    if (!ranges_check()) ok = false;
    printf("index ranges: %s\n", ok ? "ok" : "FAIL");
    const bool cover = tiles_cover<32>() && tiles_cover<64>() && tiles_cover<96>() && tiles_cover<128>() &&
                       tiles_cover<256>() && tiles_cover<384>() && tiles_cover<512>();
    printf("tile loads cover every chunk once: %s\n", cover ? "ok" : "FAIL");
    ok = ok && cover;

    std::mt19937 rng(1234);
    const float s64 = 0.125f;
    // name, b, h, hkv, sq, sk, d, scale, softcap, wl, wr, alibi, kv_splits, row pad
    ok &= run_case<32, false>({"d32 plain", 1, 2, 2, 70, 150, 32, 0.17f, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<32, false>({"d32 causal sq>sk (empty rows), gqa 2", 1, 4, 2, 150, 90, 32, 0.17f, 0, -1, 0, false,
                               1, 0},
                              rng);
    ok &= run_case<32, false>({"d24 (padded, unaligned) window", 2, 2, 1, 97, 133, 24, 0.2f, 0, 20, 5, false, 2, 0},
                              rng);
    ok &= run_case<64, false>({"d64 plain sq<sk", 1, 2, 1, 77, 300, 64, s64, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<64, true>({"d64 causal softcap alibi gqa split", 1, 4, 1, 140, 200, 64, s64, 5.f, -1, 0, true, 2, 0},
                             rng);
    ok &= run_case<64, false>({"d48 strided rows", 1, 2, 2, 65, 129, 48, 0.15f, 0, 30, -1, false, 1, 8}, rng);
    ok &= run_case<96, false>({"d96 causal", 1, 2, 1, 130, 130, 96, 0.1f, 0, -1, 0, false, 1, 0}, rng);
    ok &= run_case<96, true>({"d80 window softcap", 1, 3, 3, 100, 170, 80, 0.11f, 10.f, 40, 10, false, 1, 0}, rng);
    ok &= run_case<128, false>({"d128 plain", 1, 2, 2, 140, 260, 128, 0.088f, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<128, false>({"d128 causal gqa 3 split 3", 1, 3, 1, 150, 150, 128, 0.088f, 0, -1, 0, false, 3, 0},
                               rng);
    ok &= run_case<128, true>({"d100 (odd chunks) alibi window", 1, 2, 1, 90, 200, 100, 0.1f, 0, 50, 0, true, 1, 0},
                              rng);
    ok &= run_case<256, false>({"d256 plain", 1, 1, 1, 70, 130, 256, 0.0625f, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<256, true>({"d200 causal softcap gqa", 1, 2, 1, 90, 100, 200, 0.07f, 8.f, -1, 0, false, 1, 0}, rng);
    ok &= run_case<256, false>({"d136 sq>sk causal split", 1, 2, 1, 75, 40, 136, 0.08f, 0, -1, 0, false, 2, 4}, rng);
    // Edges: one row and key; a diagonal-only window; rows without keys (sq > sk, causal);
    // a window that leaves key blocks no row sees (their dk/dv must be written as zeros); no
    // query rows at all (dk/dv zeros).
    ok &= run_case<32, false>({"edge 1x1 d8", 1, 1, 1, 1, 1, 8, 0.3f, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<64, true>({"edge diagonal only, alibi", 2, 2, 2, 33, 33, 64, 0.125f, 0, 0, 0, true, 1, 0}, rng);
    ok &= run_case<32, false>({"edge sq 5 > sk 3 causal", 1, 1, 1, 5, 3, 32, 0.2f, 0, -1, 0, false, 1, 0}, rng);
    ok &= run_case<128, false>({"edge unseen key blocks (window 3, sk 400)", 1, 2, 1, 20, 400, 128, 0.09f, 0, 3, 0,
                                false, 1, 0},
                               rng);
    ok &= run_case<128, false>({"edge unseen key blocks, split", 1, 2, 1, 20, 400, 128, 0.09f, 0, 3, 0, false, 2, 0},
                               rng);
    ok &= run_case<96, false>({"edge sq 0", 1, 2, 1, 0, 50, 96, 0.1f, 0, -1, -1, false, 1, 0}, rng);
    // The d128 large-smem tile (BwdTraitsLarge<128>: Q/dO double-buffered, dS in its own tile).
    ok &= run_case<128, false, BwdTraitsLarge<128>>(
        {"d128 large plain", 1, 2, 2, 140, 260, 128, 0.088f, 0, -1, -1, false, 1, 0}, rng);
    ok &= run_case<128, false, BwdTraitsLarge<128>>(
        {"d128 large causal gqa 3 split 3", 1, 3, 1, 150, 150, 128, 0.088f, 0, -1, 0, false, 3, 0}, rng);
    ok &= run_case<128, true, BwdTraitsLarge<128>>(
        {"d100 large (odd chunks) alibi window softcap", 1, 2, 1, 90, 200, 100, 0.1f, 6.f, 50, 0, true, 1, 0}, rng);
    ok &= run_case<128, false, BwdTraitsLarge<128>>(
        {"d128 large window 3 strided, unseen key blocks", 2, 2, 1, 75, 300, 128, 0.09f, 0, 3, 0, false, 2, 8}, rng);
    // The f32 kernel.
    ok &= run_case_f32({"d64 causal gqa 2", 1, 4, 2, 70, 90, 64, 0.125f, 0, -1, 0, false, 1, 0}, rng);
    ok &= run_case_f32({"d33 window softcap alibi split", 2, 3, 1, 40, 57, 33, 0.2f, 7.f, 9, 3, true, 3, 0}, rng);
    ok &= run_case_f32({"d256 sq>sk causal", 1, 2, 1, 35, 20, 256, 0.0625f, 0, -1, 0, false, 1, 0}, rng);
    ok &= run_case_f32({"d1", 1, 1, 1, 17, 18, 1, 1.f, 0, -1, -1, false, 1, 0}, rng);
    printf("%s\n", ok ? "selfcheck: all passed" : "selfcheck: FAILED");
    return ok ? 0 : 1;
}
