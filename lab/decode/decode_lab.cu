// Host launcher for kernels/decode_sm80.cu, loaded by lab/decode/decode_lab.py through ctypes
// so that our kernel and PyTorch SDPA are checked and timed in one process by one method.
// It mirrors src/cuda/decode.rs and src/cuda/heuristics.rs (kernel choice, split count,
// workspace layout); the crate's tests cover the Rust side. Build: lab/build.sh decode.

// kernels/decode_sm80.cu with the entry points of every instance (lab/build.sh generates it).
#include "decode_sm80.gen.cu"

#include <cuda.h>
#include <cuda_runtime.h>

#include <fstream>
#include <iterator>
#include <string>

#include <algorithm>

using KernelFn = void (*)(const FattnParams);

// As src/cuda/heuristics.rs (split_keys): above this many splits one block per SM, and at most
// this many partial rows per tile.
constexpr long long kMaxSplitsAllSlots = 16;
constexpr long long kMaxPartialRows = 256;

static int g_last_splits = 0;
static int g_last_blocks_per_sm = 0;

extern "C" int lab_last_splits() { return g_last_splits; }
extern "C" int lab_last_blocks_per_sm() { return g_last_blocks_per_sm; }

// Tile variants of the bf16 D=128 plain kernel, selected with lab_set_variant (0 = shipped).
extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads, 3) lab_bf16_d128_s2(const FattnParams p) {
    fattn_decode::decode_block<__nv_bfloat16, 128, false, false, 2>(p);
}
extern "C" __global__ void __launch_bounds__(fattn_decode::kThreads) lab_bf16_d128_s4(const FattnParams p) {
    fattn_decode::decode_block<__nv_bfloat16, 128, false, false, 4>(p);
}
static int g_variant = 0;
extern "C" void lab_set_variant(int v) { g_variant = v; }

// Launch-path experiment: the bf16 D=128 kernel from an image loaded through the driver API,
// as candle loads the crate's PTX (cuModuleLoadData; mode 0), or through cuLibraryLoadData
// (mode 1), instead of the runtime's registered fatbin.
static CUfunction g_drv_fn = nullptr;
extern "C" int lab_drv_load(const char* path, int mode) {
    std::ifstream f(path, std::ios::binary);
    static std::string image;
    image.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    image.push_back('\0');
    cudaFree(0);
    CUresult r;
    if (mode == 0) {
        CUmodule m;
        if ((r = cuModuleLoadData(&m, image.data())) != CUDA_SUCCESS) return 100 + (int)r;
        if ((r = cuModuleGetFunction(&g_drv_fn, m, "fattn_decode_bf16_d128")) != CUDA_SUCCESS) return 200 + (int)r;
    } else {
        CUlibrary lib;
        CUkernel k;
        if ((r = cuLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)) != CUDA_SUCCESS)
            return 300 + (int)r;
        if ((r = cuLibraryGetKernel(&k, lib, "fattn_decode_bf16_d128")) != CUDA_SUCCESS) return 400 + (int)r;
        if ((r = cuKernelGetFunction(&g_drv_fn, k)) != CUDA_SUCCESS) return 500 + (int)r;
    }
    const int smem = fattn_decode::Traits<128>::kSmemElems * 2;
    if ((r = cuFuncSetAttribute(g_drv_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)) != CUDA_SUCCESS)
        return 600 + (int)r;
    return 0;
}

// Every production instance, from the list build.rs generates out of src/cuda/instances.rs.
struct Instance {
    int dtype;  // 0 bf16, 1 f16, 2 f32 (decode_lab.py's codes)
    KernelFn fn;
    int head_dim, variant, smem;
};
constexpr int kBF16 = 0, kF16 = 1, kF32 = 2;
#define LAB_DTYPE_BF16 kBF16
#define LAB_DTYPE_F16 kF16
#define LAB_DTYPE_F32 kF32
#define LAB_INSTANCE(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM) \
    {LAB_DTYPE_##DTYPE, NAME, HEAD_DIM, VARIANT, SMEM},
static const Instance kInstances[] = {FATTN_INSTANCES_DECODE_SM80(LAB_INSTANCE)};
#undef LAB_INSTANCE

// As src/cuda/heuristics.rs (`instance`): the smallest instance of the dtype and variant whose
// head dim holds dim; the tile variants replace the plain bf16 D=128 one.
static KernelFn pick(int dtype, int dim, bool mod, int* smem, int* d_inst) {
    if (dtype == kBF16 && dim > 64 && dim <= 128 && !mod && g_variant == 2) {
        *d_inst = 128;
        *smem = fattn_decode::Traits<128, 2>::kSmemElems * 2;
        return lab_bf16_d128_s2;
    }
    if (dtype == kBF16 && dim > 64 && dim <= 128 && !mod && g_variant == 4) {
        *d_inst = 128;
        *smem = fattn_decode::Traits<128, 4>::kSmemElems * 2;
        return lab_bf16_d128_s4;
    }
    const Instance* best = nullptr;
    for (const Instance& x : kInstances) {
        const bool serves = x.variant == 2 || (x.variant == 1) == mod;
        if (x.dtype == dtype && serves && x.head_dim >= dim && (!best || x.head_dim < best->head_dim)) best = &x;
    }
    if (!best) return nullptr;
    *d_inst = best->head_dim;
    *smem = best->smem;
    return best->fn;
}

static void key_range_host(int i, int sq, int sk, int wl, int wr, int* lo, int* hi) {
    const long long diag = (long long)i + sk - sq;
    long long l = wl < 0 ? 0 : diag - wl;
    long long h = wr < 0 ? sk : diag + wr + 1;
    l = std::min<long long>(std::max<long long>(l, 0), sk);
    h = std::min<long long>(std::max<long long>(h, l), sk);
    *lo = (int)l;
    *hi = (int)h;
}

// strides: q (b, s, h), k (b, s, h), v (b, s, h), out (b, s, h), in elements.
extern "C" int lab_decode(int dtype, const void* q, const void* k, const void* v, void* out, const long long* strides,
                          int b, int sq, int sk, int h, int hkv, int d, float scale, float softcap, int wl, int wr,
                          const float* alibi, int splits_override, float* workspace, long long workspace_floats,
                          void* stream) {
    int smem = 0, d_inst = 0;
    const bool mod = softcap > 0.f || alibi != nullptr;
    KernelFn fn = pick(dtype, d, mod, &smem, &d_inst);
    if (!fn) return -1;
    // Set up each kernel once (as candle caches its functions), so that the host work per
    // call is only the launches.
    static KernelFn ready[64];
    static int ready_blocks[64], n_ready = 0, sms = 0;
    cudaError_t e;
    int blocks_per_sm = 0;
    for (int x = 0; x < n_ready; ++x)
        if (ready[x] == fn) blocks_per_sm = ready_blocks[x];
    if (blocks_per_sm == 0) {
        if ((e = cudaFuncSetAttribute((const void*)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem)) != cudaSuccess)
            return 1000 + (int)e;
        if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, (const void*)fn, fattn_decode::kThreads,
                                                               smem)) != cudaSuccess)
            return 2000 + (int)e;
        int dev = 0;
        if ((e = cudaGetDevice(&dev)) != cudaSuccess) return 3000 + (int)e;
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return 3000 + (int)e;
        if (n_ready < 64) {
            ready[n_ready] = fn;
            ready_blocks[n_ready++] = blocks_per_sm;
        }
    }

    FattnParams p{};
    p.q = q; p.k = k; p.v = v; p.o = out;
    p.q_batch_stride = strides[0]; p.q_seq_stride = strides[1]; p.q_head_stride = strides[2];
    p.k_batch_stride = strides[3]; p.k_seq_stride = strides[4]; p.k_head_stride = strides[5];
    p.v_batch_stride = strides[6]; p.v_seq_stride = strides[7]; p.v_head_stride = strides[8];
    p.o_batch_stride = strides[9]; p.o_seq_stride = strides[10]; p.o_head_stride = strides[11];
    p.batch = b; p.seq_q = sq; p.seq_k = sk; p.heads = h; p.kv_heads = hkv; p.head_dim = d;
    p.kv_group = h / hkv;
    p.row_groups = (p.kv_group * sq + fattn_decode::kRows - 1) / fattn_decode::kRows;
    int lo0, hi0, lo1, hi1;
    key_range_host(0, sq, sk, wl, wr, &lo0, &hi0);
    key_range_host(sq - 1, sq, sk, wl, wr, &lo1, &hi1);
    p.key_begin = lo0;
    p.key_end = std::max(hi1, lo0);
    p.window_left = wl; p.window_right = wr;
    // As common_params in src/cuda/mod.rs.
    p.scale = scale; p.softcap = softcap; p.alibi_slopes = alibi;
    p.scale_log2 = scale * 1.4426950408889634f;
    p.softcap_inv_scaled = softcap > 0.f ? scale / softcap : 0.f;
    p.softcap_log2 = softcap > 0.f ? softcap * 1.4426950408889634f : 0.f;
    const int per16 = dtype == 2 ? 4 : 8;  // elements in 16 bytes
    bool aligned = d % per16 == 0;
    for (const void* ptr : {q, k, v}) aligned = aligned && ((uintptr_t)ptr % 16 == 0);
    for (int x = 0; x < 9; ++x) aligned = aligned && strides[x] % per16 == 0;
    p.vec_in = aligned;

    // Splits, as split_keys in src/cuda/heuristics.rs: as many blocks as are resident at once
    // (rounded down), one per SM when that is more than 16 splits, at most 256 partial rows
    // per tile; in whole 64-key rounds.
    const long long key_len = p.key_end - p.key_begin;
    const long long rounds = (key_len + 63) / 64;
    const long long pairs = (long long)b * hkv * p.row_groups;
    const long long tile_rows = std::min<long long>((long long)p.kv_group * sq, fattn_decode::kRows);
    long long splits = (long long)sms * blocks_per_sm / pairs;
    if (splits > kMaxSplitsAllSlots) splits = sms / pairs;
    splits = std::min(splits, kMaxPartialRows / tile_rows);
    if (splits_override > 0) splits = splits_override;  // sweeps: any count, whole rounds
    splits = std::max<long long>(1, std::min<long long>(splits, std::max<long long>(rounds, 1)));
    const long long rounds_per_split = rounds > 0 ? (rounds + splits - 1) / splits : 0;
    p.keys_per_split = (int)(rounds_per_split * 64);
    p.num_splits = key_len > 0 ? (int)((key_len + p.keys_per_split - 1) / p.keys_per_split) : 1;
    g_last_splits = p.num_splits;
    g_last_blocks_per_sm = blocks_per_sm;
    const long long rows_total = (long long)b * sq * h;
    cudaStream_t st = (cudaStream_t)stream;
    if (p.num_splits > 1) {
        const long long need = (long long)p.num_splits * rows_total * (d_inst + 2);
        if (need > workspace_floats) return -2;
        p.partial_o = workspace;
        p.partial_ml = workspace + (long long)p.num_splits * rows_total * d_inst;
        // Per-tile arrival counters: zeroed once when (re)allocated; every launch leaves them
        // zero (as the thread-local buffer of src/cuda/decode.rs).
        static unsigned int* counters = nullptr;
        static long long counters_len = 0;
        if (counters_len < pairs) {
            if (counters && (e = cudaFree(counters)) != cudaSuccess) return 6000 + (int)e;
            counters = nullptr;
            counters_len = 0;
            if ((e = cudaMalloc(&counters, pairs * sizeof(unsigned int))) != cudaSuccess) return 6000 + (int)e;
            if ((e = cudaMemsetAsync(counters, 0, pairs * sizeof(unsigned int), st)) != cudaSuccess) return 6000 + (int)e;
            counters_len = pairs;
        }
        p.tile_counters = counters;
    }
    dim3 grid(p.num_splits, hkv * p.row_groups, b);
    if (g_drv_fn && fn == fattn_decode_bf16_d128) {
        void* args[] = {&p};
        CUresult r = cuLaunchKernel(g_drv_fn, grid.x, grid.y, grid.z, fattn_decode::kThreads, 1, 1, smem, st, args, nullptr);
        if (r != CUDA_SUCCESS) return 7000 + (int)r;
        return 0;
    }
    fn<<<grid, fattn_decode::kThreads, smem, st>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess) return 4000 + (int)e;
    return 0;
}

// The prefill kernel (kernels/fwd_sm80.cu) on the same inputs, for the dispatch crossover:
// bf16, head dim 128, no softcap/ALiBi; launched as src/cuda/prefill.rs does.
#include "fwd_sm80.gen.cu"

extern "C" int lab_prefill_bf16_d128(const void* q, const void* k, const void* v, void* out, const long long* strides,
                                     int b, int sq, int sk, int h, int hkv, float scale, int wl, int wr, void* stream) {
    using Tr = fattn::FwdTraits<128>;
    static bool ready = false;
    cudaError_t e;
    if (!ready) {
        if ((e = cudaFuncSetAttribute((const void*)fattn_fwd_bf16_d128, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      Tr::kSmemBytes)) != cudaSuccess)
            return 1000 + (int)e;
        ready = true;
    }
    FattnParams p{};
    p.q = q; p.k = k; p.v = v; p.o = out;
    p.q_batch_stride = strides[0]; p.q_seq_stride = strides[1]; p.q_head_stride = strides[2];
    p.k_batch_stride = strides[3]; p.k_seq_stride = strides[4]; p.k_head_stride = strides[5];
    p.v_batch_stride = strides[6]; p.v_seq_stride = strides[7]; p.v_head_stride = strides[8];
    p.o_batch_stride = strides[9]; p.o_seq_stride = strides[10]; p.o_head_stride = strides[11];
    p.batch = b; p.heads = h; p.kv_heads = hkv; p.seq_q = sq; p.seq_k = sk; p.head_dim = 128;
    p.kv_group = h / hkv; p.window_left = wl; p.window_right = wr;
    p.vec_in = 1; p.vec_out = 1;
    p.scale_log2 = scale * 1.4426950408889634f;
    p.scale = scale;
    dim3 grid(b * h * ((sq + Tr::kBlockM - 1) / Tr::kBlockM));
    fattn_fwd_bf16_d128<<<grid, Tr::kThreads, Tr::kSmemBytes, (cudaStream_t)stream>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess) return 4000 + (int)e;
    return 0;
}
