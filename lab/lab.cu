// Kernel lab: checks every prefill kernel instance (kernels/fwd_sm80.cu) against an f64 CPU
// reference and times the benchmark shapes, with no Rust build in the loop. Built here by
// lab/build.sh, run on the GPU machine by lab/run.sh (lab/README.md).
//
//   lab check            correctness sweep (dtypes, head dims, masks, GQA, ALiBi, softcap,
//                        odd sizes, strided/unaligned layouts); exit code 1 on any failure
//   lab bench            the benchmark shapes (bf16): median time and TF/s, plus tile variants
//
// Check rule: max |fused - ref64| <= 2 · max |naive - ref64| + floor,
// where "naive" emulates candle's naive path in the same dtype on the CPU (dot products in
// f32, softmax in f32, P rounded to the dtype, P·V in f32, output rounded). The output is
// poisoned (NaN bytes) before each launch; a non-finite output fails.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

// kernels/fwd_sm80.cu with the entry points of every instance (lab/build.sh generates it).
#include "fwd_sm80.gen.cu"
#include "bin/base_fwd.cu"  // the baseline for A/B bench rows (lab/build.sh writes it)

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, \
                    cudaGetErrorString(e_));                                                      \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

enum Dt { F32 = 0, F16 = 1, BF16 = 2 };
static const char* dt_name(int dt) { return dt == F32 ? "f32" : dt == F16 ? "f16" : "bf16"; }

// Layouts of q/k/v in memory: 0 = contiguous (b,s,h,d); 1 = (b,h,s,d) viewed as (b,s,h,d)
// (a transpose); 2 = padded rows (head stride d + 8); 3 = unaligned (offset 1, head stride
// d + 1: forces the element-load path).
struct Case {
    int b, h, hkv, sq, sk, d, dt;
    bool causal;
    int wl, wr;  // -1 = unbounded (before causal)
    float softcap;
    bool alibi;
    int layout;
    int sample_rows;  // 0 = check every row
    float scale_mul = 1.f;  // softmax_scale = scale_mul / sqrt(d) (negative: the `_mods` path)
};

struct Tensor4 {
    void* base = nullptr;  // allocation
    size_t bytes = 0;
    int64_t off = 0, sb = 0, ss = 0, sh = 0;
};

static size_t esize(int dt) { return dt == F32 ? 4 : 2; }

static Tensor4 make_layout(int b, int s, int h, int d, int layout, int dt) {
    Tensor4 t;
    int64_t n = 0;
    switch (layout) {
        case 0: t.sh = d; t.ss = (int64_t)h * d; t.sb = (int64_t)s * h * d; n = t.sb * b; break;
        case 1: t.ss = d; t.sh = (int64_t)s * d; t.sb = (int64_t)h * s * d; n = t.sb * b; break;
        case 2: t.sh = d + 8; t.ss = (int64_t)h * (d + 8); t.sb = (int64_t)s * t.ss; n = t.sb * b; break;
        default: t.off = 1; t.sh = d + 1; t.ss = (int64_t)h * (d + 1) + 3; t.sb = (int64_t)s * t.ss + 5; n = t.sb * b + 1; break;
    }
    t.bytes = n * esize(dt);
    CK(cudaMalloc(&t.base, t.bytes));
    return t;
}

__device__ __forceinline__ float hash_normal(uint64_t seed, uint64_t i) {
    // Sum of 4 uniforms (Irwin-Hall), centered and scaled to unit variance.
    float acc = 0.f;
    for (int k = 0; k < 4; ++k) {
        uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 4 + k;
        x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
        acc += (x >> 40) * (1.0f / 16777216.0f);
    }
    return (acc - 2.f) * 1.7320508f;
}

__global__ void fill_random(void* p, size_t n, int dt, uint64_t seed, float scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = hash_normal(seed, i) * scale;
        if (dt == F32) ((float*)p)[i] = v;
        else if (dt == F16) ((__half*)p)[i] = __float2half_rn(v);
        else ((__nv_bfloat16*)p)[i] = __float2bfloat16_rn(v);
    }
}

static std::vector<float> to_host_f32(const Tensor4& t, int dt) {
    size_t n = t.bytes / esize(dt);
    std::vector<float> out(n);
    if (dt == F32) {
        CK(cudaMemcpy(out.data(), t.base, t.bytes, cudaMemcpyDeviceToHost));
    } else {
        std::vector<uint16_t> raw(n);
        CK(cudaMemcpy(raw.data(), t.base, t.bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            if (dt == F16) { __half_raw hr; hr.x = raw[i]; out[i] = __half2float(__half(hr)); }
            else { uint32_t u = (uint32_t)raw[i] << 16; memcpy(&out[i], &u, 4); }
        }
    }
    return out;
}

static float round_dt(float x, int dt) {
    if (dt == F16) return __half2float(__float2half_rn(x));
    if (dt == BF16) return __bfloat162float(__float2bfloat16_rn(x));
    return x;
}

static FattnParams make_params(const Case& c, const Tensor4& q, const Tensor4& k, const Tensor4& v, void* o,
                               const float* alibi, float scale) {
    FattnParams p{};
    const size_t es = esize(c.dt);
    p.q = (char*)q.base + q.off * es; p.k = (char*)k.base + k.off * es; p.v = (char*)v.base + v.off * es; p.o = o;
    p.alibi_slopes = alibi;
    p.q_batch_stride = q.sb; p.q_seq_stride = q.ss; p.q_head_stride = q.sh;
    p.k_batch_stride = k.sb; p.k_seq_stride = k.ss; p.k_head_stride = k.sh;
    p.v_batch_stride = v.sb; p.v_seq_stride = v.ss; p.v_head_stride = v.sh;
    p.o_head_stride = c.d; p.o_seq_stride = (int64_t)c.h * c.d; p.o_batch_stride = (int64_t)c.sq * c.h * c.d;
    p.batch = c.b; p.heads = c.h; p.kv_heads = c.hkv; p.seq_q = c.sq; p.seq_k = c.sk; p.head_dim = c.d;
    p.kv_group = c.h / c.hkv;
    // Same normalization as src/problem.rs: causal = right 0; windows past every key = unbounded.
    int wl = c.wl, wr = c.causal ? 0 : c.wr;
    if (wl >= 0 && wl >= c.sk - 1) wl = -1;
    if (wr >= 0 && wr >= c.sq - 1) wr = -1;
    p.window_left = wl; p.window_right = wr;
    auto al = [](const Tensor4& t) { return t.off % 8 == 0 && t.sb % 8 == 0 && t.ss % 8 == 0 && t.sh % 8 == 0; };
    p.vec_in = c.d % 8 == 0 && al(q) && al(k) && al(v);
    p.vec_out = c.d % 8 == 0;
    p.scale_log2 = scale * (float)M_LOG2E;
    p.softcap_inv_scaled = c.softcap > 0 ? scale / c.softcap : 0.f;
    p.softcap_log2 = c.softcap > 0 ? c.softcap * (float)M_LOG2E : 0.f;
    p.scale = scale;
    p.softcap = c.softcap;
    return p;
}

typedef void (*KernelFn)(FattnParams);
struct Launch {
    KernelFn fn;
    int threads, block_m, smem;
    const char* name;
};

// Every production instance, from the list build.rs generates out of src/cuda/instances.rs.
struct Instance {
    int dt;
    KernelFn fn;
    int head_dim, variant, threads, block_m, smem;  // smem 0: per head dim (f32)
    const char* name;
};
#define LAB_INSTANCE(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM) \
    {DTYPE, (KernelFn)NAME, HEAD_DIM, VARIANT, THREADS, ROWS, SMEM, #NAME},
static const Instance kInstances[] = {FATTN_INSTANCES_FWD_SM80(LAB_INSTANCE)};
#undef LAB_INSTANCE

// The instance the crate picks (src/cuda/heuristics.rs, `instance`): the smallest of the
// dtype and variant whose head dim holds d.
static Launch pick(int dt, int d, bool mods) {
    const Instance* best = nullptr;
    for (const Instance& x : kInstances) {
        const bool serves = x.variant == 2 || (x.variant == 1) == mods;
        if (x.dt == dt && serves && x.head_dim >= d && (!best || x.head_dim < best->head_dim)) best = &x;
    }
    if (!best) {
        fprintf(stderr, "head dim %d unsupported\n", d);
        exit(2);
    }
    const int smem = best->smem != 0 ? best->smem : (int)(fattn::f32::smem_floats(d) * 4);
    return {best->fn, best->threads, best->block_m, smem, best->name};
}

static void launch(const Launch& L, const FattnParams& p) {
    CK(cudaFuncSetAttribute((const void*)L.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, L.smem));
    dim3 grid(p.batch * p.heads * ((p.seq_q + L.block_m - 1) / L.block_m));
    L.fn<<<grid, L.threads, L.smem>>>(p);
    CK(cudaGetLastError());
}

// f64 reference and same-dtype naive emulation for one (b, i, h) row.
static void ref_row(const Case& c, const FattnParams& p, const std::vector<float>& Q, const std::vector<float>& K,
                    const std::vector<float>& V, const Tensor4& tq, const Tensor4& tk, const Tensor4& tv,
                    const std::vector<float>& slopes, float scale, int b, int i, int h, double* out64, float* outn) {
    const int d = c.d, kvh = h / (c.h / c.hkv);
    const float* q = &Q[tq.off + b * tq.sb + (int64_t)i * tq.ss + h * tq.sh];
    std::vector<double> s64(c.sk);
    std::vector<float> s32(c.sk);
    const int diag = i + c.sk - c.sq;
    int lo = p.window_left < 0 ? 0 : std::max(0, diag - p.window_left);
    int hi = p.window_right < 0 ? c.sk : std::min(c.sk, diag + p.window_right + 1);
    double mx = -INFINITY; float mxf = -INFINITY;
    const double slope = c.alibi ? slopes[b * c.h + h] : 0.0;
    for (int j = 0; j < c.sk; ++j) {
        const float* kr = &K[tk.off + b * tk.sb + (int64_t)j * tk.ss + kvh * tk.sh];
        double a = 0; float af = 0;
        for (int e = 0; e < d; ++e) { a += (double)q[e] * kr[e]; af += q[e] * kr[e]; }
        double x = a * scale; float xf = af * scale;
        if (c.softcap > 0) { x = c.softcap * std::tanh(x / c.softcap); xf = c.softcap * tanhf(xf / c.softcap); }
        if (c.alibi) { x -= slope * std::fabs((double)(i + c.sk - c.sq - j)); xf -= (float)slope * fabsf((float)(i + c.sk - c.sq - j)); }
        if (j < lo || j >= hi) { x = -INFINITY; xf = -INFINITY; }
        s64[j] = x; s32[j] = xf;
        mx = std::max(mx, x); mxf = std::max(mxf, xf);
    }
    for (int e = 0; e < d; ++e) { out64[e] = 0; outn[e] = 0; }
    if (lo >= hi) return;
    double l = 0; float lf = 0;
    for (int j = 0; j < c.sk; ++j) { s64[j] = std::exp(s64[j] - mx); l += s64[j]; s32[j] = expf(s32[j] - mxf); lf += s32[j]; }
    std::vector<float> accf(d, 0.f);
    for (int j = lo; j < hi; ++j) {
        const float* vr = &V[tv.off + b * tv.sb + (int64_t)j * tv.ss + kvh * tv.sh];
        const double pj = s64[j] / l;
        const float pf = round_dt(s32[j] / lf, c.dt);
        for (int e = 0; e < d; ++e) { out64[e] += pj * vr[e]; accf[e] += pf * vr[e]; }
    }
    for (int e = 0; e < d; ++e) outn[e] = round_dt(accf[e], c.dt);
}

struct CheckResult { double err, err_naive, max_ref; long bad_nonfinite; };

static CheckResult run_check(const Case& c, uint64_t seed, const Launch* override = nullptr) {
    Tensor4 tq = make_layout(c.b, c.sq, c.h, c.d, c.layout, c.dt);
    Tensor4 tk = make_layout(c.b, c.sk, c.hkv, c.d, c.layout, c.dt);
    Tensor4 tv = make_layout(c.b, c.sk, c.hkv, c.d, c.layout, c.dt);
    fill_random<<<256, 256>>>(tq.base, tq.bytes / esize(c.dt), c.dt, seed * 3 + 1, 1.0f);
    fill_random<<<256, 256>>>(tk.base, tk.bytes / esize(c.dt), c.dt, seed * 3 + 2, 1.0f);
    fill_random<<<256, 256>>>(tv.base, tv.bytes / esize(c.dt), c.dt, seed * 3 + 3, 1.0f);
    CK(cudaGetLastError());
    std::vector<float> slopes;
    float* dslopes = nullptr;
    if (c.alibi) {
        for (int bb = 0; bb < c.b; ++bb)
            for (int hh = 0; hh < c.h; ++hh) slopes.push_back(std::pow(2.0f, -8.0f * (hh + 1) / c.h) * (1 + 0.1f * bb));
        CK(cudaMalloc(&dslopes, slopes.size() * 4));
        CK(cudaMemcpy(dslopes, slopes.data(), slopes.size() * 4, cudaMemcpyHostToDevice));
    }
    const size_t on = (size_t)c.b * c.sq * c.h * c.d;
    void* o;
    CK(cudaMalloc(&o, on * esize(c.dt)));
    CK(cudaMemset(o, 0xff, on * esize(c.dt)));  // NaN in every dtype
    const float scale = c.scale_mul / std::sqrt((float)c.d);
    FattnParams p = make_params(c, tq, tk, tv, o, dslopes, scale);
    Launch L = override ? *override : pick(c.dt, c.d, c.softcap > 0 || c.alibi || scale <= 0);
    launch(L, p);
    CK(cudaDeviceSynchronize());

    auto Q = to_host_f32(tq, c.dt), K = to_host_f32(tk, c.dt), V = to_host_f32(tv, c.dt);
    Tensor4 to; to.bytes = on * esize(c.dt); to.base = o;
    auto O = to_host_f32(to, c.dt);

    // Rows to check: all, or a deterministic sample that includes the first and last rows.
    std::vector<int64_t> rows;
    const int64_t total = (int64_t)c.b * c.sq * c.h;
    if (c.sample_rows == 0 || c.sample_rows >= total) { for (int64_t r = 0; r < total; ++r) rows.push_back(r); }
    else {
        rows.push_back(0); rows.push_back(total - 1);
        uint64_t x = seed + 12345;
        for (int k = 0; k < c.sample_rows; ++k) { x = x * 6364136223846793005ull + 1442695040888963407ull; rows.push_back((int64_t)((x >> 20) % total)); }
    }
    const int nthreads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<CheckResult> part(nthreads, CheckResult{0, 0, 0, 0});
    std::vector<std::thread> th;
    for (int tI = 0; tI < nthreads; ++tI)
        th.emplace_back([&, tI] {
            std::vector<double> r64(c.d); std::vector<float> rn(c.d);
            for (size_t k = tI; k < rows.size(); k += nthreads) {
                int64_t r = rows[k];
                const int h = r % c.h, i = (r / c.h) % c.sq, b = r / ((int64_t)c.h * c.sq);
                ref_row(c, p, Q, K, V, tq, tk, tv, slopes, scale, b, i, h, r64.data(), rn.data());
                const float* orow = &O[((int64_t)b * c.sq + i) * c.h * c.d + (int64_t)h * c.d];
                for (int e = 0; e < c.d; ++e) {
                    if (!std::isfinite(orow[e])) { part[tI].bad_nonfinite++; continue; }
                    part[tI].err = std::max(part[tI].err, std::fabs(orow[e] - r64[e]));
                    part[tI].err_naive = std::max(part[tI].err_naive, std::fabs(rn[e] - r64[e]));
                    part[tI].max_ref = std::max(part[tI].max_ref, std::fabs(r64[e]));
                }
            }
        });
    for (auto& x : th) x.join();
    CheckResult res{0, 0, 0, 0};
    for (auto& x : part) { res.err = std::max(res.err, x.err); res.err_naive = std::max(res.err_naive, x.err_naive); res.max_ref = std::max(res.max_ref, x.max_ref); res.bad_nonfinite += x.bad_nonfinite; }
    cudaFree(tq.base); cudaFree(tk.base); cudaFree(tv.base); cudaFree(o); if (dslopes) cudaFree(dslopes);
    return res;
}

static int cmd_check() {
    std::vector<Case> cases;
    const int dts[] = {BF16, F16, F32};
    // Every instance's head dim, square causal and rectangular non-causal, GQA.
    std::vector<int> dims;
    for (const Instance& x : kInstances)
        if (x.dt == BF16 && std::find(dims.begin(), dims.end(), x.head_dim) == dims.end()) dims.push_back(x.head_dim);
    for (int dt : dts)
        for (int d : dims) {
            cases.push_back({2, 4, 2, 193, 193, d, dt, true, -1, -1, 0, false, 0, 0});
            cases.push_back({1, 6, 3, 77, 301, d, dt, false, -1, -1, 0, false, 0, 0});
        }
    for (int dt : dts) {
        // odd head dims (padding, element-load path), d = 1
        for (int d : {1, 8, 40, 59, 80, 111, 160, 200, 255})
            cases.push_back({1, 3, 1, 65, 97, d, dt, d % 2 == 1, -1, -1, 0, false, 0, 0});
        // sq > sk causal (empty rows), sq < sk causal (KV cache), decode
        cases.push_back({2, 4, 4, 300, 70, 64, dt, true, -1, -1, 0, false, 0, 0});
        cases.push_back({2, 4, 1, 37, 500, 128, dt, true, -1, -1, 0, false, 0, 0});
        cases.push_back({3, 8, 2, 1, 777, 128, dt, true, -1, -1, 0, false, 0, 0});
        cases.push_back({3, 8, 8, 1, 1, 64, dt, false, -1, -1, 0, false, 0, 0});
        // windows: left only, right only, both, narrow (rows with nothing visible)
        cases.push_back({1, 4, 2, 257, 257, 64, dt, false, 31, -1, 0, false, 0, 0});
        cases.push_back({1, 4, 2, 190, 333, 128, dt, false, -1, 7, 0, false, 0, 0});
        cases.push_back({1, 4, 2, 333, 190, 96, dt, false, 40, 3, 0, false, 0, 0});
        cases.push_back({1, 2, 1, 300, 100, 32, dt, true, 5, -1, 0, false, 0, 0});
        // softcap, ALiBi, both with masks
        cases.push_back({2, 4, 2, 129, 200, 64, dt, false, -1, -1, 30.f, false, 0, 0});
        cases.push_back({2, 4, 2, 200, 129, 128, dt, true, -1, -1, 0, true, 0, 0});
        cases.push_back({1, 8, 1, 150, 150, 256, dt, false, 20, 10, 5.f, true, 0, 0});
        // strided layouts: transposed, padded heads, unaligned (element loads)
        cases.push_back({2, 4, 2, 130, 170, 64, dt, true, -1, -1, 0, false, 1, 0});
        cases.push_back({2, 4, 2, 130, 170, 128, dt, false, -1, -1, 0, false, 2, 0});
        cases.push_back({2, 4, 2, 130, 170, 64, dt, true, -1, -1, 0, false, 3, 0});
        cases.push_back({1, 2, 1, 99, 45, 40, dt, false, -1, -1, 0, true, 3, 0});
        // negative scale (routed to the `_mods` instance)
        {
            Case neg{2, 4, 2, 100, 120, 64, dt, true, -1, -1, 0, false, 0, 0};
            neg.scale_mul = -0.7f;
            cases.push_back(neg);
        }
        // one bench-sized shape, sampled rows
        cases.push_back({2, 16, 16, 2048, 2048, 128, dt, true, -1, -1, 0, false, 0, 400});
    }
    int fails = 0;
    uint64_t seed = 1;
    printf("%-5s %-28s %-6s %-10s %-5s %-6s %-11s %-11s %-8s %s\n", "dtype", "b,h,hkv,sq,sk,d", "causal", "window",
           "mods", "layout", "err", "naive_err", "nonfin", "result");
    // LAB_SMALL=1 (under compute-sanitizer): only the small cases.
    const bool small = getenv("LAB_SMALL") != nullptr;
    for (const Case& c : cases) {
        if (small && (c.sample_rows > 0 || (double)c.b * c.h * c.sq * c.sk * c.d > 2e7)) continue;
        CheckResult r = run_check(c, seed++);
        const double floor = c.dt == F32 ? 1e-5 : 1e-4;
        const bool ok = r.bad_nonfinite == 0 && r.err <= 2 * r.err_naive + floor;
        fails += !ok;
        char shape[64], win[32], mods[16];
        snprintf(shape, sizeof shape, "%d,%d,%d,%d,%d,%d", c.b, c.h, c.hkv, c.sq, c.sk, c.d);
        snprintf(win, sizeof win, "%d,%d", c.wl, c.wr);
        snprintf(mods, sizeof mods, "%s%s", c.softcap > 0 ? "sc" : "", c.alibi ? "al" : "");
        printf("%-5s %-28s %-6d %-10s %-5s %-6d %-11.3e %-11.3e %-8ld %s\n", dt_name(c.dt), shape, (int)c.causal, win,
               mods, c.layout, r.err, r.err_naive, r.bad_nonfinite, ok ? "ok" : "FAIL");
        fflush(stdout);
    }
    printf("check: %d of %zu cases failed\n", fails, cases.size());
    return fails ? 1 : 0;
}

// ---- bench ---------------------------------------------------------------------------------

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSM) lab_variant_bf16(const __grid_constant__ FattnParams p) {
    fattn::fwd_tensor_core<Cfg, fattn::BF16, false, false>(p);
}
template <class Cfg>
static Launch variant(const char* name) {
    return {(KernelFn)lab_variant_bf16<Cfg>, Cfg::kThreads, Cfg::kBlockM, Cfg::kSmemBytes, name};
}
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSM) lab_base_bf16(const __grid_constant__ FattnParams p) {
    fattn_base::fwd_tensor_core<Cfg, fattn::BF16, false>(p);
}
// The baseline commit's production instance for head dim D.
template <int D>
static Launch base(const char* name) {
    using Cfg = fattn_base::FwdTraits<D>;
    return {(KernelFn)lab_base_bf16<Cfg>, Cfg::kThreads, Cfg::kBlockM, Cfg::kSmemBytes, name};
}
template <class Cfg, bool kSkip>
struct WithSkip : Cfg {
    static constexpr bool kSkipRescale = kSkip;
};

static float time_launch(const Launch& L, const FattnParams& p, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) launch(L, p);
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a));
        launch(L, p);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

static int cmd_bench() {
    struct B { int b, h, sq, d; bool causal; };
    const B shapes[] = {{16, 16, 2048, 32, false}, {16, 16, 2048, 32, true}, {4, 16, 2048, 256, false},
                        {4, 16, 2048, 256, true}, {1, 8, 512, 64, false}, {1, 8, 512, 64, true}, {16, 16, 2048, 64, false}, {16, 16, 2048, 64, true},
                        {16, 16, 2048, 96, false}, {16, 16, 2048, 96, true},
                        {16, 16, 2048, 128, false}, {16, 16, 2048, 128, true}, {4, 32, 4096, 128, false},
                        {4, 32, 4096, 128, true}, {1, 32, 16384, 128, false}, {1, 32, 16384, 128, true}};
    using fattn::TileConfig;
    // Tile variants next to the production instance (LAB_VARIANTS=1; see lab/README.md).
    std::vector<std::pair<int, Launch>> variants;
    if (getenv("LAB_VARIANTS") != nullptr) variants = {
        {32, base<32>("base d32")},
        {64, base<64>("base d64")},
        {96, base<96>("base d96")},
        {96, variant<WithSkip<fattn::FwdTraits<96>, false>>("d96 no-skip")},
        {128, base<128>("base d128")},
        {128, variant<WithSkip<fattn::FwdTraits<128>, false>>("d128 no-skip")},
        {256, base<256>("base d256")},
        {256, variant<WithSkip<fattn::FwdTraits<256>, true>>("d256 skip-rescale")},
    };
    // Every variant must compute the same function before its time counts.
    int fails = 0;
    for (auto& v : variants) {
        for (Case c : {Case{2, 4, 2, 333, 333, v.first, BF16, true, -1, -1, 0, false, 0, 0},
                       Case{1, 6, 3, 77, 301, v.first - 3, BF16, false, -1, -1, 0, false, 3, 0},
                       Case{1, 4, 2, 300, 190, v.first, BF16, false, 40, 3, 0, false, 1, 0}}) {
            CheckResult r = run_check(c, 99, &v.second);
            const bool ok = r.bad_nonfinite == 0 && r.err <= 2 * r.err_naive + 1e-4;
            if (!ok) { printf("variant %s FAILS on d=%d sq=%d: err %.3e naive %.3e nonfinite %ld\n", v.second.name, c.d, c.sq, r.err, r.err_naive, r.bad_nonfinite); ++fails; }
        }
    }
    printf("variant checks: %d failures\n", fails);
    printf("%-26s %-6s %-22s %10s %8s\n", "shape(b,h,s,d)", "causal", "kernel", "ms", "TF/s");
    for (const B& s : shapes) {
        Case c{s.b, s.h, s.h, s.sq, s.sq, s.d, BF16, s.causal, -1, -1, 0, false, 0, 0};
        Tensor4 tq = make_layout(c.b, c.sq, c.h, c.d, 0, BF16), tk = make_layout(c.b, c.sk, c.h, c.d, 0, BF16),
                tv = make_layout(c.b, c.sk, c.h, c.d, 0, BF16);
        fill_random<<<1024, 256>>>(tq.base, tq.bytes / 2, BF16, 11, 1.f);
        fill_random<<<1024, 256>>>(tk.base, tk.bytes / 2, BF16, 12, 1.f);
        fill_random<<<1024, 256>>>(tv.base, tv.bytes / 2, BF16, 13, 1.f);
        void* o; CK(cudaMalloc(&o, tq.bytes));
        FattnParams p = make_params(c, tq, tk, tv, o, nullptr, 1.f / std::sqrt((float)c.d));
        const double flops = 4.0 * c.b * c.h * (double)c.sq * c.sk * c.d * (c.causal ? 0.5 : 1.0);
        char shape[64]; snprintf(shape, sizeof shape, "%d,%d,%d,%d", s.b, s.h, s.sq, s.d);
        const int reps = flops > 1e12 ? 20 : 50;
        Launch prod = pick(BF16, c.d, false);
        float ms = time_launch(prod, p, reps);
        printf("%-26s %-6d %-22s %10.4f %8.1f\n", shape, (int)s.causal, prod.name, ms, flops / ms / 1e9);
        for (auto& v : variants) {
            if (v.first != c.d) continue;
            float mv = time_launch(v.second, p, reps);
            printf("%-26s %-6d %-22s %10.4f %8.1f\n", shape, (int)s.causal, v.second.name, mv, flops / mv / 1e9);
        }
        fflush(stdout);
        cudaFree(tq.base); cudaFree(tk.base); cudaFree(tv.base); cudaFree(o);
    }
    return 0;
}

// One launch of each production bf16 instance on a bench shape, for ncu.
static int cmd_prof() {
    for (int d : {64, 128}) {
        Case c{16, 16, 16, 2048, 2048, d, BF16, false, -1, -1, 0, false, 0, 0};
        Tensor4 tq = make_layout(c.b, c.sq, c.h, c.d, 0, BF16), tk = make_layout(c.b, c.sk, c.h, c.d, 0, BF16),
                tv = make_layout(c.b, c.sk, c.h, c.d, 0, BF16);
        fill_random<<<1024, 256>>>(tq.base, tq.bytes / 2, BF16, 11, 1.f);
        fill_random<<<1024, 256>>>(tk.base, tk.bytes / 2, BF16, 12, 1.f);
        fill_random<<<1024, 256>>>(tv.base, tv.bytes / 2, BF16, 13, 1.f);
        void* o; CK(cudaMalloc(&o, tq.bytes));
        FattnParams p = make_params(c, tq, tk, tv, o, nullptr, 1.f / std::sqrt((float)c.d));
        launch(pick(BF16, d, false), p);
        CK(cudaDeviceSynchronize());
        cudaFree(tq.base); cudaFree(tk.base); cudaFree(tv.base); cudaFree(o);
    }
    return 0;
}

int main(int argc, char** argv) {
    std::string cmd = argc > 1 ? argv[1] : "check";
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
    if (cmd == "check") return cmd_check();
    if (cmd == "bench") return cmd_bench();
    if (cmd == "prof") return cmd_prof();
    fprintf(stderr, "usage: lab check|bench\n");
    return 2;
}
