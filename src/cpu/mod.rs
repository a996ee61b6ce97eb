//! CPU forward: FlashAttention-2 on the CPU.
//!
//! **What it computes.** `out = softmax(s) v` per (batch, q head, query row), with
//! `s = scale·<q,k>`, then softcap, ALiBi and the bottom-right masks of [`Problem`],
//! without an `Sq×Sk` buffer: keys are visited in tiles and the softmax is kept online
//! (running row max `m`, running sum `l`, f32 accumulator), as FlashAttention-2 does.
//!
//! **Work split.** One work item is (batch, kv head, query block, key split). Its rows are
//! the query positions of the block × the q heads that share the kv head (GQA/MQA), so one
//! K/V tile (converted to f32 once for f16/bf16; read in place for f32) serves every head
//! of the group. Items run on rayon. Decode-like calls (`sq ≤ 16`) with too few items for
//! the threads also split the keys (split-KV): each split returns its partial `(m, l, acc)`
//! and a merge rescales and adds them.
//!
//! **Per key tile.** `S = Q Kᵀ`, the online softmax, then `acc = corr·acc + P V`. When
//! several query blocks reuse each key (prefill), K is transposed and V (f16/bf16:
//! converted; f32: copied) once per call into padded-stride, line-aligned f32 blocks of
//! one key tile each ([`SharedKv`]), O(Sk·D), in buffers kept from one call to the next so
//! that their pages are not faulted in again. On CPUs
//! with AVX2 + FMA, and `d % 8 == 0`, the two products of such items run in the
//! hand-written 6×16 register-blocked kernels of [`avx2`], which also hold the softmax's
//! row max and `exp` passes: gemm's per-call dispatch and planning cost about as much as
//! its micro-kernel saved on 48 × 128 × 64 products. Elsewhere the products go through the
//! `gemm` crate (runtime dispatched SIMD micro-kernels) with every operand laid out as
//! gemm's column-major micro-kernel reads it, so gemm packs nothing: Q and P rows as they
//! are, V rows, and K transposed; with one query block (decode) the tiles are read in
//! place (f32) or converted per tile, and items of ≤ 8 rows use direct dot products /
//! axpys with software prefetch instead of gemm. The other softmax loops (softcap, ALiBi,
//! and max / `exp` off the AVX2 path) are plain loops over f32 slices compiled once per
//! instruction set (AVX-512, AVX2+FMA, portable) and picked at run time. Scores are kept
//! in base 2 (`log2(e)` is folded into Q's scale), so the exponentials are `2^x`, a
//! branch-free Cephes polynomial in FMAs so that those loops vectorize. Key tiles that no
//! row of the item can see are skipped; mask arithmetic runs only on tiles that some row
//! sees partially.
//!
//! **Tiles.** 48 rows per item × 256 keys per tile (a d = 64 Kᵀ tile is 68 KiB, the S tile
//! 51 KiB: both in L2; the kernels' column slices, 4 and 8 KiB, in L1). With gemm, 48
//! rows was its limit for streaming an unpacked operand (packing cost 13% at 96 rows) and
//! 64–256 keys were within noise of each other. With the AVX2 kernels, 48, 96 and 192 rows
//! gave 61.5, 60.5 and 60.5 ms single-thread at (1,4,4,2048,2048,64) (CPU time, min of 5
//! alternating runs): no reason to change. 256 keys rather than 128 halve the per-row,
//! per-tile work of the online softmax and the accumulator's reload and rescale: at
//! (1,16,16,2048,2048,64) f32 single-thread the min of 5 calls went from 247–286 to
//! 226–257 ms (6 interleaved rounds), the softmax's share of the samples from 14.1–14.4%
//! to 11.7–12.3%, and on 2 threads the medians from 156–177 to 147–162 ms; the causal
//! shape (more masked keys computed on the diagonal) did not get slower (medians 83–101
//! against 82–92 ms); 512 keys were level with 256. Measured on the 2-core dev
//! machine (AMD EPYC Zen 3, 2.45 GHz base, about 3.1 GHz under load; AVX2 + FMA, no
//! AVX-512). There, single-thread at (1,16,16,2048,2048,64) f32 (perf samples), the AVX2
//! kernels take about 80% of the time at about 93% of the FMA peak (a register-only FMA
//! loop runs at 101 GFLOP/s per core, 2 × 101 on both), the softmax about 12–13%,
//! preparing K/V about 2% and the rest (Q and output copies, rayon) about 5%.
//!
//! **History** (same shape, same machine, noisy). Per-row scalar loop (interim): not
//! timed. Tiles through gemm with row-major operands: 420 ms on 2 threads, 30% of the
//! time in gemm's packing. Column-major operands + shared Kᵀ (no packing) at 48 rows:
//! 515 ms single-thread, the unpacked micro-kernel thrashing L1 sets on 4 KiB-multiple
//! strides; padded strides: 302 ms single-thread. Criterion medians are in
//! `benches/attention.rs`'s output (249 ms, 69 GFLOP/s, vs naive 1.79 s when written;
//! 199 ms, 86 GFLOP/s, at the last gemm version). With the AVX2 kernels: criterion
//! medians from 145 to 198 ms over a dozen runs in one hour (f32 154–198 ms, 87–112
//! GFLOP/s; bf16 145–181 ms), moving together with the decode row (4.3–7.3 ms), so with
//! the host rather than the guest's load (0–1.3); single-thread, the call costs 252 ms of
//! CPU (4 × 63 ms at (1,4,4,2048,2048,64)), 126 ms on two uncontended cores. Then, each
//! step measured single-thread at (1,16,16,2048,2048,64) f32 against the previous one in
//! interleaved runs: K/V buffers kept across calls (about 3k page faults per call fewer:
//! their preparation 25–32 → 9–13 ms); Kᵀ stored tile by tile (min of 5 calls 254–263 →
//! 238–247 ms); softmax in base 2 (its share of the samples 15.5–16.5% → 11–13%); K/V
//! prepared tile by tile for all kv heads, 8 keys at once (2.4–3.1 ms on 2 threads, from
//! 4.8–9). Criterion, interleaved with the version before these steps in the same
//! window: 160–170 ms against 190–195 ms. Tried without a measurable gain: Estrin's form
//! for the `2^x` polynomial (shorter dependency chain), 96 or 192 rows per item (a quarter
//! of the K/V traffic), 24 rows (double: about 3% slower), software prefetch of the next
//! S row or of the next Kᵀ / V column slices (slower), per-row scalar work moved out of
//! the softmax loop.

use candle_core::{backend::BackendStorage, bail, CpuStorage, Layout, Result, WithDType};
use gemm::{gemm, Parallelism};
use half::{bf16, f16, slice::HalfFloatSliceExt};
use rayon::prelude::*;
use std::f32::consts::LOG2_E;
use std::sync::Mutex;

use crate::problem::{Problem, Strides};

#[cfg(target_arch = "x86_64")]
mod avx2;

/// Query rows per work item, counted over the q heads that share one kv head (a group of
/// `g` heads takes `max(1, 48 / g)` positions). See the module header for the measurements.
const ROWS_PER_ITEM: usize = 48;
/// Keys per tile: the `S` tile is `ROWS_PER_ITEM × KEYS_PER_TILE` f32 (module header).
const KEYS_PER_TILE: usize = 256;
/// The row stride of the `S` tile.
const S_LD: usize = padded_stride(KEYS_PER_TILE);
/// Calls with at most this many query rows are decode-like and may split the keys.
const DECODE_MAX_SEQ_Q: usize = 16;
/// Items with at most this many rows and one query block use direct dot products and
/// axpys instead of gemm (decode: 1–8 q heads per kv head).
const DIRECT_MAX_ROWS: usize = 8;
/// A key split is never shorter than this, so each split amortizes its merge.
const MIN_KEYS_PER_SPLIT: usize = 256;

pub(crate) fn forward(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    alibi: Option<&[f32]>,
) -> Result<CpuStorage> {
    let (qs, ks, vs) = (Strides::from_layout(ql)?, Strides::from_layout(kl)?, Strides::from_layout(vl)?);
    if let Some(a) = alibi {
        if a.len() != p.batch * p.heads {
            bail!("fused-attn cpu: expected {} alibi slopes (batch × heads), got {}", p.batch * p.heads, a.len())
        }
    }
    match (q, k, v) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => run::<f32>(p, (q, qs), (k, ks), (v, vs), alibi),
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v)) => run::<f16>(p, (q, qs), (k, ks), (v, vs), alibi),
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v)) => {
            run::<bf16>(p, (q, qs), (k, ks), (v, vs), alibi)
        }
        _ => bail!(
            "fused-attn cpu: q, k and v must share one of f32, f16, bf16; got {:?}, {:?}, {:?}",
            q.dtype(),
            k.dtype(),
            v.dtype()
        ),
    }
}

/// An input element type. f32 is read in place; f16/bf16 are converted per tile.
trait Element: WithDType {
    fn to_f32(src: &[Self], dst: &mut [f32]);
    fn from_f32(src: &[f32], dst: &mut [Self]);
    /// The data as f32 when it already is f32 (then K/V tiles need no conversion).
    fn as_f32(src: &[Self]) -> Option<&[f32]>;
}

impl Element for f32 {
    #[inline(always)]
    fn to_f32(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src)
    }
    #[inline(always)]
    fn from_f32(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src)
    }
    fn as_f32(src: &[f32]) -> Option<&[f32]> {
        Some(src)
    }
}

impl Element for f16 {
    #[inline(always)]
    fn to_f32(src: &[f16], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst) // F16C when the CPU has it (runtime detected by `half`)
    }
    #[inline(always)]
    fn from_f32(src: &[f32], dst: &mut [f16]) {
        dst.convert_from_f32_slice(src)
    }
    fn as_f32(_: &[f16]) -> Option<&[f32]> {
        None
    }
}

impl Element for bf16 {
    #[inline(always)]
    fn to_f32(src: &[bf16], dst: &mut [f32]) {
        // bf16 is the top half of an f32: a shift, exact for every value, NaN included.
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits((s.to_bits() as u32) << 16);
        }
    }
    #[inline(always)]
    fn from_f32(src: &[f32], dst: &mut [bf16]) {
        dst.convert_from_f32_slice(src)
    }
    fn as_f32(_: &[bf16]) -> Option<&[f32]> {
        None
    }
}

/// One strided `(batch, seq, heads, head_dim)` input.
#[derive(Clone, Copy)]
struct Input<'a, T> {
    data: &'a [T],
    st: Strides,
}

impl<'a, T> Input<'a, T> {
    /// Checks that every `(b, s, h)` row of `d` elements lies inside `data`, which makes the
    /// strided tile reads below sound.
    fn new((data, st): (&'a [T], Strides), dims: (usize, usize, usize), d: usize, name: &str) -> Result<Self> {
        let (b, s, h) = dims;
        let last = st.offset + (b - 1) * st.batch + (s - 1) * st.seq + (h - 1) * st.head + d;
        if last > data.len() {
            bail!("fused-attn cpu: {name} layout {st:?} reaches element {last} of a {}-element buffer", data.len())
        }
        Ok(Self { data, st })
    }

    #[inline(always)]
    fn start(&self, b: usize, s: usize, h: usize) -> usize {
        self.st.offset + b * self.st.batch + s * self.st.seq + h * self.st.head
    }

    #[inline(always)]
    fn row(&self, b: usize, s: usize, h: usize, d: usize) -> &'a [T] {
        &self.data[self.start(b, s, h)..][..d]
    }
}

/// What every work item shares.
struct Ctx<'a, T> {
    p: Problem,
    q: Input<'a, T>,
    k: Input<'a, T>,
    v: Input<'a, T>,
    alibi: Option<&'a [f32]>,
    /// Query positions per item; rows per item = `q_block × group`.
    q_block: usize,
    /// When several query blocks reuse each key, K and V are prepared once per call
    /// instead of once per tile and item.
    shared: Option<SharedKv>,
}

/// K transposed and V, in f32, laid out for gemm and the [`avx2`] kernels, one block per
/// (batch, key tile of KEYS_PER_TILE keys, kv head), in that order. A block of Kᵀ holds
/// `kt[t·KT_LD + jj] = k[b, j0 + jj, kvh, t]`, a block of V `v[jj·v_ld + c] = v[b, j0 + jj,
/// kvh, c]`: the `d` rows of one tile's Kᵀ lie together (68 KiB at d = 64) instead of `d`
/// pages apart, and one tile of every kv head is prepared from the same input pages, read
/// once in order (prepared head by head, each page was visited once per head, and the
/// preparation took 5–9 ms of a 150 ms call on 2 threads). Blocks start on a 64-byte line.
/// O(Sk·D) per kv head (the size of K and V themselves), never Sq×Sk.
struct SharedKv {
    kt: PooledBuffer,
    v: PooledBuffer,
    v_ld: usize,
    kv_heads: usize,
    n_tiles: usize,
    head_dim: usize,
}

/// Keys transposed together: each Kᵀ row gets 32 contiguous bytes at a time rather than
/// one float, so that the `d` destination lines of the kv heads of a tile (64 KiB at 16
/// heads, d = 64) are not each written 8 times over.
const TRANSPOSE_KEYS: usize = 8;

/// The row stride of a stored Kᵀ tile.
const KT_LD: usize = padded_stride(KEYS_PER_TILE);

/// A row stride (in f32) of at least `n` that is a whole number of 64-byte lines but not a
/// multiple of 4 KiB / 64 lines, so that the rows of a tile do not all fall into the same
/// L1 sets (a 1024- or 2048-float stride made the unpacked micro-kernel 30% slower).
const fn padded_stride(n: usize) -> usize {
    let lines = n.div_ceil(16);
    16 * if lines.is_multiple_of(4) { lines + 1 } else { lines }
}

/// The buffers of the last call's [`SharedKv`], kept for the next call. Freshly allocated,
/// the two buffers (19 MiB at (1,16,16,2048,2048,64)) cost one page fault per 4 KiB on
/// first touch; those faults made up most of the 25–32 ms that preparing K and V took per
/// call single-thread, out of 290–390 ms. Kept: the largest buffers seen, the size of the
/// largest call's K and V in f32 (never Sq×Sk).
static KT_POOL: Mutex<Vec<f32>> = Mutex::new(Vec::new());
static V_POOL: Mutex<Vec<f32>> = Mutex::new(Vec::new());

/// A `Vec<f32>` taken from a one-slot pool and given back on drop, seen as `len` floats
/// from its first 64-byte line boundary. A call that finds the pool empty (another call
/// holds its buffer) allocates its own.
struct PooledBuffer {
    buf: Vec<f32>,
    start: usize,
    len: usize,
    pool: &'static Mutex<Vec<f32>>,
}

/// Floats in a 64-byte cache line.
const LINE_FLOATS: usize = 16;

impl PooledBuffer {
    /// Floats that a previous call left are not cleared: the callers write every float
    /// they read.
    fn take(pool: &'static Mutex<Vec<f32>>, len: usize) -> Self {
        let mut buf = std::mem::take(&mut *pool.lock().unwrap_or_else(|e| e.into_inner()));
        buf.truncate(len + LINE_FLOATS);
        buf.resize(len + LINE_FLOATS, 0.0);
        // At most 15 floats: the allocation is 4-byte aligned.
        let start = buf.as_ptr().align_offset(4 * LINE_FLOATS);
        Self { buf, start, len, pool }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        let mut kept = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if self.buf.capacity() > kept.capacity() {
            *kept = std::mem::take(&mut self.buf);
        }
    }
}

impl std::ops::Deref for PooledBuffer {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buf[self.start..][..self.len]
    }
}

impl std::ops::DerefMut for PooledBuffer {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.start..][..self.len]
    }
}

impl SharedKv {
    fn new<T: Element>(p: &Problem, k: &Input<'_, T>, v: &Input<'_, T>) -> Self {
        let (sk, d, hkv) = (p.seq_k, p.head_dim, p.kv_heads);
        let (n_tiles, v_ld) = (sk.div_ceil(KEYS_PER_TILE), padded_stride(d));
        let (kt_block, v_block) = (d * KT_LD, KEYS_PER_TILE * v_ld);
        let mut kt = PooledBuffer::take(&KT_POOL, p.batch * n_tiles * hkv * kt_block);
        let mut vf = PooledBuffer::take(&V_POOL, p.batch * n_tiles * hkv * v_block);
        let tiles = kt.par_chunks_mut(hkv * kt_block).zip(vf.par_chunks_mut(hkv * v_block));
        tiles.enumerate().for_each(|(bt, (kt, vf))| {
            let (b, j0) = (bt / n_tiles, (bt % n_tiles) * KEYS_PER_TILE);
            let jb = KEYS_PER_TILE.min(sk - j0);
            let mut rows = [[0f32; crate::problem::MAX_HEAD_DIM]; TRANSPOSE_KEYS];
            for g0 in (0..jb).step_by(TRANSPOSE_KEYS) {
                let keys = TRANSPOSE_KEYS.min(jb - g0);
                for (kvh, (kt, vf)) in kt.chunks_exact_mut(kt_block).zip(vf.chunks_exact_mut(v_block)).enumerate() {
                    for (jj, row) in (g0..g0 + keys).zip(&mut rows) {
                        T::to_f32(k.row(b, j0 + jj, kvh, d), &mut row[..d]);
                        T::to_f32(v.row(b, j0 + jj, kvh, d), &mut vf[jj * v_ld..][..d]);
                    }
                    for (t, dst) in kt.chunks_exact_mut(KT_LD).enumerate() {
                        for (x, row) in dst[g0..g0 + keys].iter_mut().zip(&rows) {
                            *x = row[t];
                        }
                    }
                }
            }
            // The last tile's missing keys, which the score kernel's last 16-key block reads.
            kt.chunks_exact_mut(KT_LD).for_each(|row| row[jb..KEYS_PER_TILE].fill(0.0));
        });
        Self { kt, v: vf, v_ld, kv_heads: hkv, n_tiles, head_dim: d }
    }

    /// The index of the block of keys `j0..` (a multiple of KEYS_PER_TILE) of kv head `kvh`.
    fn block(&self, b: usize, kvh: usize, j0: usize) -> usize {
        (b * self.n_tiles + j0 / KEYS_PER_TILE) * self.kv_heads + kvh
    }

    /// Kᵀ of keys `j0..`: `d` rows of KEYS_PER_TILE keys at stride KT_LD.
    fn kt_tile(&self, b: usize, kvh: usize, j0: usize) -> *const f32 {
        self.kt[self.block(b, kvh, j0) * self.head_dim * KT_LD..].as_ptr()
    }

    /// V of keys `j0..`: KEYS_PER_TILE rows of `d` at stride `v_ld`.
    fn v_tile(&self, b: usize, kvh: usize, j0: usize) -> *const f32 {
        self.v[self.block(b, kvh, j0) * KEYS_PER_TILE * self.v_ld..].as_ptr()
    }
}

/// One unit of parallel work: query positions `q0..q1` of all q heads of kv head `kvh` in
/// batch `b`, against keys `k_lo..k_hi`.
#[derive(Clone, Copy, Debug)]
struct Item {
    b: usize,
    kvh: usize,
    q0: usize,
    q1: usize,
    k_lo: usize,
    k_hi: usize,
}

/// Per-thread buffers, reused across items. Row `r` of an item is query position
/// `q0 + r / g`, q head `kvh·g + r % g`, which is also the output's memory order.
#[derive(Default)]
struct Scratch {
    q: Vec<f32>,
    s: Vec<f32>,
    acc: Vec<f32>,
    m: Vec<f32>,
    l: Vec<f32>,
    /// Per row: `e^(m_old - m_new)`, the factor for `acc` before this tile's `P V`.
    corr: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
}

/// An item's online-softmax state after its last key tile.
struct Partial {
    m: Vec<f32>,
    l: Vec<f32>,
    acc: Vec<f32>,
}

fn run<T: Element>(
    p: &Problem,
    q: (&[T], Strides),
    k: (&[T], Strides),
    v: (&[T], Strides),
    alibi: Option<&[f32]>,
) -> Result<CpuStorage> {
    let (b, sq, sk, h, hkv, d) = (p.batch, p.seq_q, p.seq_k, p.heads, p.kv_heads, p.head_dim);
    let mut out = vec![T::zero(); b * sq * h * d];
    if out.is_empty() || sk == 0 {
        return Ok(T::to_cpu_storage_owned(out));
    }
    let ctx = Ctx {
        p: *p,
        q: Input::new(q, (b, sq, h), d, "q")?,
        k: Input::new(k, (b, sk, hkv), d, "k")?,
        v: Input::new(v, (b, sk, hkv), d, "v")?,
        alibi,
        q_block: (ROWS_PER_ITEM / p.group_size()).clamp(1, sq),
        shared: None,
    };
    let n_qblocks = sq.div_ceil(ctx.q_block);
    let ctx = Ctx { shared: (n_qblocks > 1).then(|| SharedKv::new(p, &ctx.k, &ctx.v)), ..ctx };
    let n_groups = b * hkv * n_qblocks;
    let threads = rayon::current_num_threads();
    let n_splits = if sq <= DECODE_MAX_SEQ_Q && n_groups < 4 * threads {
        (4 * threads).div_ceil(n_groups).min(sk.div_ceil(MIN_KEYS_PER_SPLIT)).max(1)
    } else {
        1
    };
    let item = |idx: usize, split: usize| -> Item {
        let (bi, rest) = (idx / (hkv * n_qblocks), idx % (hkv * n_qblocks));
        let (kvh, qb) = (rest / n_qblocks, rest % n_qblocks);
        let q0 = qb * ctx.q_block;
        // Whole key tiles, so that a split's tiles are the stored Kᵀ tiles.
        let per_split = sk.div_ceil(n_splits).next_multiple_of(KEYS_PER_TILE);
        Item {
            b: bi,
            kvh,
            q0,
            q1: (q0 + ctx.q_block).min(sq),
            k_lo: split * per_split,
            k_hi: ((split + 1) * per_split).min(sk),
        }
    };
    let attend = select_kernel::<T>();
    let row_len = d * p.group_size();
    let out_ptr = SendPtr(out.as_mut_ptr());

    if n_splits == 1 {
        (0..n_groups).into_par_iter().for_each_init(Scratch::default, |sc, idx| {
            let it = item(idx, 0);
            // SAFETY: `attend` reads the inputs only inside the bounds `Input::new` checked
            // and writes only `sc`, which it sizes itself.
            unsafe { attend(&ctx, &it, sc) };
            let rows = (it.q1 - it.q0) * p.group_size();
            let normalized = &mut sc.q[..rows * d]; // Q is no longer needed: reuse it.
            finalize_rows(&sc.acc[..rows * d], &sc.l[..rows], d, normalized);
            for (i, src) in (it.q0..it.q1).zip(normalized.chunks_exact(row_len)) {
                let start = ((it.b * sq + i) * h + it.kvh * p.group_size()) * d;
                // SAFETY: items partition the (batch, position, kv-head group) rows of `out`,
                // so this in-bounds range (i < sq, kvh < hkv) is written by this item only,
                // and `out` outlives the parallel loop.
                let dst = unsafe { std::slice::from_raw_parts_mut(out_ptr.get().add(start), row_len) };
                T::from_f32(src, dst);
            }
        });
    } else {
        let partials: Vec<Partial> = (0..n_groups * n_splits)
            .into_par_iter()
            .map_init(Scratch::default, |sc, idx| {
                let it = item(idx / n_splits, idx % n_splits);
                // SAFETY: as above.
                unsafe { attend(&ctx, &it, sc) };
                let rows = (it.q1 - it.q0) * p.group_size();
                Partial { m: sc.m[..rows].to_vec(), l: sc.l[..rows].to_vec(), acc: sc.acc[..rows * d].to_vec() }
            })
            .collect();
        out.par_chunks_mut(sq * h * d)
            .enumerate()
            .for_each(|(bi, out_b)| merge_splits(&ctx, bi, &partials, n_qblocks, n_splits, out_b));
    }
    Ok(T::to_cpu_storage_owned(out))
}

/// Combines the key splits of every (kv head, query block) of batch `bi` and writes the
/// output rows: `acc = Σ e^(m_s - M) acc_s`, `l = Σ e^(m_s - M) l_s`, `out = acc / l`.
fn merge_splits<T: Element>(
    ctx: &Ctx<'_, T>,
    bi: usize,
    partials: &[Partial],
    n_qblocks: usize,
    n_splits: usize,
    out_b: &mut [T],
) {
    let p = &ctx.p;
    let (d, g) = (p.head_dim, p.group_size());
    for kvh in 0..p.kv_heads {
        for qb in 0..n_qblocks {
            let group = (bi * p.kv_heads + kvh) * n_qblocks + qb;
            let splits = &partials[group * n_splits..][..n_splits];
            let q0 = qb * ctx.q_block;
            let q1 = (q0 + ctx.q_block).min(p.seq_q);
            let rows = (q1 - q0) * g;
            let mut acc = vec![0f32; rows * d];
            let mut l = vec![0f32; rows];
            for r in 0..rows {
                let m_max = splits.iter().fold(f32::NEG_INFINITY, |a, s| a.max(s.m[r]));
                let m_use = if m_max == f32::NEG_INFINITY { 0.0 } else { m_max };
                for s in splits {
                    let w = (s.m[r] - m_use).exp2();
                    l[r] += w * s.l[r];
                    for (a, x) in acc[r * d..][..d].iter_mut().zip(&s.acc[r * d..][..d]) {
                        *a += w * x;
                    }
                }
            }
            let mut buf = vec![0f32; g * d];
            for i in q0..q1 {
                let r0 = (i - q0) * g;
                finalize_rows(&acc[r0 * d..][..g * d], &l[r0..][..g], d, &mut buf);
                T::from_f32(&buf, &mut out_b[(i * p.heads + kvh * g) * d..][..g * d]);
            }
        }
    }
}

/// `acc *= corr` per row of `d` (the online softmax's correction for a grown row max).
fn rescale_rows(acc: &mut [f32], corr: &[f32], d: usize) {
    for (acc, &c) in acc.chunks_exact_mut(d).zip(corr) {
        if c != 1.0 {
            acc.iter_mut().for_each(|a| *a *= c);
        }
    }
}

/// `out = acc / l` per row; a row that saw no key (`l == 0`) outputs zeros. A NaN `l`
/// stays NaN.
fn finalize_rows(acc: &[f32], l: &[f32], d: usize, out: &mut [f32]) {
    for (r, &lr) in l.iter().enumerate() {
        let inv = if lr == 0.0 { 0.0 } else { 1.0 / lr };
        for (o, a) in out[r * d..][..d].iter_mut().zip(&acc[r * d..][..d]) {
            *o = a * inv;
        }
    }
}

/// A pointer shared across rayon tasks that write disjoint ranges.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: only used to write disjoint ranges of one buffer from several threads.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

type AttendFn<T> = unsafe fn(&Ctx<'_, T>, &Item, &mut Scratch);

/// The widest instruction set this CPU has, for the softmax loops (the `gemm` crate
/// dispatches its own kernels).
fn select_kernel<T: Element>() -> AttendFn<T> {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            return attend_avx512::<T>;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return attend_avx2::<T>;
        }
    }
    attend_portable::<T>
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; the features were detected.
    unsafe { attend::<T, false>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; the features were detected.
    unsafe { attend::<T, true>(ctx, it, sc) }
}

unsafe fn attend_portable<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's.
    unsafe { attend::<T, false>(ctx, it, sc) }
}

/// Runs one item's key tiles and leaves its online-softmax state `(m, l, acc)` in `sc`
/// (rows `0..(q1 - q0)·g`).
///
/// With `AVX2` (the caller has AVX2 and FMA) the prefill tile products use the [`avx2`]
/// kernels when `d % 8 == 0`.
///
/// # Safety
/// `ctx.k` and `ctx.v` must have passed `Input::new` (every row lies inside its buffer);
/// with `AVX2`, the CPU has AVX2 and FMA.
#[inline(always)]
unsafe fn attend<T: Element, const AVX2: bool>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    let p = &ctx.p;
    let (d, g) = (p.head_dim, p.group_size());
    let rows = (it.q1 - it.q0) * g;
    let (keys, ld) = (KEYS_PER_TILE, S_LD);
    sc.q.resize(rows * d, 0.0);
    sc.s.resize(rows * ld, 0.0);
    sc.acc.clear();
    sc.acc.resize(rows * d, 0.0);
    sc.m.clear();
    sc.m.resize(rows, f32::NEG_INFINITY);
    sc.l.clear();
    sc.l.resize(rows, 0.0);
    sc.corr.resize(rows, 0.0);

    // Scores are kept in base 2 (`log2(e)·s`), so that the softmax's exponentials are
    // `2^x`, whose range reduction is exact: fold `scale·log2(e)` into Q. With a softcap c
    // the score is c·tanh(scale·<q,k> / c): fold scale / c into Q, and log2(e) into c.
    let q_scale = if p.softcap > 0.0 { p.scale / p.softcap } else { p.scale * LOG2_E };
    for (r, dst) in sc.q.chunks_exact_mut(d).enumerate() {
        let (i, hq) = (it.q0 + r / g, it.kvh * g + r % g);
        T::to_f32(ctx.q.row(it.b, i, hq, d), dst);
        dst.iter_mut().for_each(|x| *x *= q_scale);
    }

    // Key ranges are monotone in the row, so the item's keys are [lo(q0), hi(q1 - 1)).
    let (first_lo, first_hi) = p.key_range(it.q0);
    let (last_lo, last_hi) = p.key_range(it.q1 - 1);
    let (lo, hi) = (first_lo.max(it.k_lo), last_hi.min(it.k_hi));
    // Tiles start at multiples of KEYS_PER_TILE, the stored Kᵀ tiles; the keys of the first
    // tile below `lo` are masked for every row (split boundaries are tile multiples too).
    for j0 in (lo - lo % keys..hi).step_by(keys) {
        let j1 = (j0 + keys).min(hi);
        let jb = j1 - j0;
        // Every row sees every key of the tile: no mask arithmetic.
        let full = last_lo <= j0 && first_hi >= j1;
        if !full
            && !(it.q0..it.q1).any(|i| {
                let (a, b) = p.key_range(i);
                a < j1 && b > j0
            })
        {
            continue; // no row sees this tile
        }

        // Decode-like items (few rows, one query block) stream K and V once: dot products
        // and axpys straight off the rows, no transposition or packing.
        let direct = rows <= DIRECT_MAX_ROWS && ctx.shared.is_none();
        'scores: {
            if let Some(shared) = &ctx.shared {
                let kt = shared.kt_tile(it.b, it.kvh, j0);
                #[cfg(target_arch = "x86_64")]
                if AVX2 && d.is_multiple_of(8) {
                    // SAFETY: the caller has AVX2 and FMA; Q holds rows × d; the Kᵀ tile has d
                    // rows of 16·⌈jb/16⌉ ≤ KEYS_PER_TILE ≤ KT_LD floats at stride KT_LD inside
                    // `shared.kt`; S holds rows × S_LD with 16·⌈jb/16⌉ ≤ S_LD.
                    unsafe { avx2::scores(&sc.q, d, rows, kt, KT_LD, jb, sc.s.as_mut_ptr()) };
                    break 'scores;
                }
                // In gemm's column-major terms this is Sᵀ (jb × rows) = K (jb × d) · Qᵀ (d × rows),
                // with every operand already column-major (the shared Kᵀ, Q rows, S rows), so
                // gemm streams them without packing.
                // SAFETY: S holds rows × ld (jb ≤ ld); the Kᵀ tile is d columns of jb ≤ KT_LD
                // keys at stride KT_LD inside `shared.kt`; Q holds rows × d.
                unsafe {
                    gemm(
                        jb,
                        rows,
                        d,
                        sc.s.as_mut_ptr(),
                        ld as isize,
                        1,
                        false,
                        kt,
                        KT_LD as isize,
                        1,
                        sc.q.as_ptr(),
                        d as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    )
                };
            } else {
                let (k_ptr, k_stride) = kv_tile(&ctx.k, it.b, j0, jb, it.kvh, d, &mut sc.k);
                if direct {
                    // SAFETY: `kv_tile` returns jb rows of d at k_stride inside one buffer.
                    let k_rows = unsafe { std::slice::from_raw_parts(k_ptr, (jb - 1) * k_stride + d) };
                    for (jj, krow) in (0..jb).map(|jj| (jj, &k_rows[jj * k_stride..][..d])) {
                        prefetch_row(k_ptr.wrapping_add((jj + PREFETCH_ROWS) * k_stride), d);
                        for (r, qrow) in sc.q.chunks_exact(d).enumerate() {
                            sc.s[r * ld + jj] = dot(qrow, krow);
                        }
                    }
                } else {
                    // SAFETY: as above, with K rows (row-major; gemm packs them) at k_stride.
                    unsafe {
                        gemm(
                            jb,
                            rows,
                            d,
                            sc.s.as_mut_ptr(),
                            ld as isize,
                            1,
                            false,
                            k_ptr,
                            1,
                            k_stride as isize,
                            sc.q.as_ptr(),
                            d as isize,
                            1,
                            0.0,
                            1.0,
                            false,
                            false,
                            false,
                            Parallelism::None,
                        )
                    };
                }
            }
        }

        for r in 0..rows {
            let (i, hq) = (it.q0 + r / g, it.kvh * g + r % g);
            let srow = &mut sc.s[r * ld..][..jb];
            if p.softcap > 0.0 {
                softcap_in_place(srow, p.softcap * LOG2_E);
            }
            if let Some(slopes) = ctx.alibi {
                add_alibi(srow, slopes[it.b * p.heads + hq] * LOG2_E, (p.diag(i) - j0 as i64) as f32);
            }
            if !full {
                let (a, b) = p.key_range(i);
                let a = a.saturating_sub(j0).min(jb);
                let b = b.saturating_sub(j0).clamp(a, jb);
                srow[..a].fill(f32::NEG_INFINITY);
                srow[b..].fill(f32::NEG_INFINITY);
            }
            let m_old = sc.m[r];
            // SAFETY: with AVX2, the caller has AVX2 and FMA.
            let m_new = m_old.max(unsafe { tile_row_max::<AVX2>(srow) });
            // A row that has seen no visible score yet keeps m = -inf; exponentiate against
            // 0 so that its masked scores give 0 and NaN scores stay NaN.
            let m_use = if m_new == f32::NEG_INFINITY { 0.0 } else { m_new };
            // SAFETY: as above.
            let sum = unsafe { tile_exp2_sub::<AVX2>(srow, m_use) };
            let corr = exp2_f32(m_old - m_use);
            sc.l[r] = sc.l[r] * corr + sum;
            sc.m[r] = m_new;
            sc.corr[r] = corr;
        }

        let (v_ptr, v_stride) = match &ctx.shared {
            Some(shared) => (shared.v_tile(it.b, it.kvh, j0), shared.v_ld),
            None => kv_tile(&ctx.v, it.b, j0, jb, it.kvh, d, &mut sc.v),
        };
        if direct {
            rescale_rows(&mut sc.acc, &sc.corr[..rows], d);
            // SAFETY: `kv_tile` returns jb rows of d at v_stride inside one buffer.
            let v_rows = unsafe { std::slice::from_raw_parts(v_ptr, (jb - 1) * v_stride + d) };
            for jj in 0..jb {
                let vrow = &v_rows[jj * v_stride..][..d];
                prefetch_row(v_ptr.wrapping_add((jj + PREFETCH_ROWS) * v_stride), d);
                for (r, acc) in sc.acc.chunks_exact_mut(d).enumerate() {
                    let pr = sc.s[r * ld + jj];
                    acc.iter_mut().zip(vrow).for_each(|(a, &x)| *a = pr.mul_add(x, *a));
                }
            }
            continue;
        }
        #[cfg(target_arch = "x86_64")]
        if AVX2 && d.is_multiple_of(8) && ctx.shared.is_some() {
            // SAFETY: the caller has AVX2 and FMA; d is a multiple of 8; acc holds rows × d,
            // corr rows; P (in S) rows × S_LD with jb ≤ S_LD; the V tile is jb ≤ KEYS_PER_TILE
            // rows of d at v_stride inside its block of `shared.v`.
            unsafe { avx2::accumulate(&mut sc.acc, &sc.corr, d, rows, sc.s.as_ptr(), v_ptr, v_stride, jb) };
            continue;
        }
        rescale_rows(&mut sc.acc, &sc.corr[..rows], d);
        // Oᵀ (d × rows) += Vᵀ (d × jb) · Pᵀ (jb × rows): V rows, P rows and the accumulator
        // rows are all column-major operands for gemm, so again nothing is packed.
        // SAFETY: acc holds rows × d; P (in S) rows × ld; the V tile is jb rows of d at
        // v_stride inside its buffer (`kv_tile`, or its block of `shared.v`).
        unsafe {
            gemm(
                d,
                rows,
                jb,
                sc.acc.as_mut_ptr(),
                d as isize,
                1,
                true,
                v_ptr,
                v_stride as isize,
                1,
                sc.s.as_ptr(),
                ld as isize,
                1,
                1.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            )
        };
    }
}

/// K/V rows the direct (decode) loops prefetch ahead. Rows of one kv head lie a
/// `kv_heads·d` stride apart, often 4 KiB or more, where the hardware prefetchers (which
/// stay within a page) do not follow; without this the (1,32,8,1,4096,128) f32 decode
/// spent most of its time waiting on loads (16 ms; see the module header for the result).
const PREFETCH_ROWS: usize = 8;

/// Asks for the `d` floats at `ptr` to be brought into L1.
#[inline(always)]
fn prefetch_row(ptr: *const f32, d: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..d).step_by(16) {
        // SAFETY: a prefetch is a hint that never faults, whatever the address; the pointer
        // is formed with wrapping arithmetic and never dereferenced.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.wrapping_add(off) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, d);
}

/// `<a, b>` with independent lanes, so that it vectorizes.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for ((l, &x), &y) in lanes.iter_mut().zip(x).zip(y) {
            *l = x.mul_add(y, *l);
        }
    }
    tail + lanes.iter().sum::<f32>()
}

/// The K or V tile of keys `j0..j0 + jb` of kv head `kvh` as f32 rows of `d` at the
/// returned stride: in place for f32 inputs, else converted into `buf`.
#[inline(always)]
fn kv_tile<T: Element>(
    x: &Input<'_, T>,
    b: usize,
    j0: usize,
    jb: usize,
    kvh: usize,
    d: usize,
    buf: &mut Vec<f32>,
) -> (*const f32, usize) {
    if let Some(data) = T::as_f32(x.data) {
        return (data[x.start(b, j0, kvh)..].as_ptr(), x.st.seq);
    }
    buf.resize(jb * d, 0.0);
    for (jj, dst) in buf.chunks_exact_mut(d).enumerate() {
        T::to_f32(x.row(b, j0 + jj, kvh, d), dst);
    }
    (buf.as_ptr(), d)
}

/// SIMD width the reductions below keep as independent lanes (16 f32 = one AVX-512
/// register, two AVX2 registers), so that LLVM vectorizes them without reassociating.
const LANES: usize = 16;

/// [`row_max`] through the [`avx2`] kernel when `AVX2`.
///
/// # Safety
/// With `AVX2`, the CPU has AVX2 and FMA.
#[inline(always)]
unsafe fn tile_row_max<const AVX2: bool>(x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: the caller's contract.
        return unsafe { avx2::row_max(x) };
    }
    row_max(x)
}

/// [`exp2_sub_in_place`] through the [`avx2`] kernel when `AVX2`.
///
/// # Safety
/// With `AVX2`, the CPU has AVX2 and FMA.
#[inline(always)]
unsafe fn tile_exp2_sub<const AVX2: bool>(x: &mut [f32], m: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: the caller's contract.
        return unsafe { avx2::exp2_sub_sum(x, m) };
    }
    exp2_sub_in_place(x, m)
}

/// The largest element, ignoring NaN; `-inf` for an empty or all-NaN slice.
#[inline(always)]
fn row_max(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = if v > *l { v } else { *l };
        }
    }
    let tail = chunks.remainder().iter().fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
    lanes.iter().fold(tail, |a, &v| if v > a { v } else { a })
}

/// `x = 2^(x - m)` in place; returns the sum.
#[inline(always)]
fn exp2_sub_in_place(x: &mut [f32], m: f32) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = x.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c.iter_mut()) {
            *v = exp2_f32(*v - m);
            *l += *v;
        }
    }
    let mut sum = 0f32;
    for v in chunks.into_remainder() {
        *v = exp2_f32(*v - m);
        sum += *v;
    }
    sum + lanes.iter().sum::<f32>()
}

/// `x = c·tanh(x)`, with `tanh(x) = sign(x)·(1 - e^(-2|x|)) / (1 + e^(-2|x|))`.
#[inline(always)]
fn softcap_in_place(x: &mut [f32], c: f32) {
    for v in x.iter_mut() {
        let t = exp2_f32(-2.0 * LOG2_E * v.abs());
        *v = c * ((1.0 - t) / (1.0 + t)).copysign(*v);
    }
}

/// `x[jj] -= slope·|dist0 - jj|`, where `dist0 = diag(i) - j0`.
#[inline(always)]
fn add_alibi(x: &mut [f32], slope: f32, dist0: f32) {
    for (jj, v) in x.iter_mut().enumerate() {
        *v -= slope * (dist0 - jj as f32).abs();
    }
}

/// `2^x = 2^n · 2^f` with `n = round(x)` and `f = x - n` in [-1/2, 1/2] (exact), and `2^f`
/// the degree-6 polynomial of Cephes `exp2f`, in Horner form.
const EXP2_POLY: [f32; 7] =
    [1.535_336_2e-4, 1.339_887_4e-3, 9.618_438e-3, 5.550_332_5e-2, 2.402_264_8e-1, 6.931_472e-1, 1.0];
/// `1.5·2^23 + 127`: adding it to x rounds x to the integer n held in the low mantissa
/// bits, biased by 127, so that shifting those bits into the exponent field gives `2^n`.
const EXP2_ROUND: f32 = 12_583_039.0;
/// Inputs are clamped here: `2^-127` comes out as exactly 0 (the biased exponent is 0).
const EXP2_MIN: f32 = -127.0;

/// `2^x` in f32 without branches or calls, so loops over it vectorize, for x ≤ 128 or NaN
/// (the callers pass differences from a running max and `-2·log2(e)·|x|`, all ≤ 0).
/// Within 0.64 ulp of the exact value over [-126, 0] (f64 reference, 1.7 million points);
/// exactly 0 below -127 and for -inf, exactly 1 at 0; NaN stays NaN. 12 vector operations
/// on AVX2 where the base-e Cephes `expf` took 17 (its range reduction by n·ln 2 needs two
/// FMAs and the polynomial two more steps).
#[inline(always)]
fn exp2_f32(x: f32) -> f32 {
    let xc = if x < EXP2_MIN { EXP2_MIN } else { x };
    let t = xc + EXP2_ROUND;
    let f = xc - (t - EXP2_ROUND);
    let poly = EXP2_POLY[1..].iter().fold(EXP2_POLY[0], |acc, &c| acc.mul_add(f, c));
    poly * f32::from_bits(t.to_bits() << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' error floor allows the fused `exp` 2 ulp (`tests/common`, `floor`).
    #[test]
    fn exp2_f32_is_within_one_ulp() {
        let mut worst = 0f64;
        for i in 0..1_700_000 {
            let x = -126.0 + i as f32 * 7.41e-5;
            let (got, want) = (exp2_f32(x) as f64, (x as f64).exp2());
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < f32::EPSILON as f64, "max relative error {worst}");
        assert_eq!(exp2_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp2_f32(-127.5), 0.0);
        assert!(exp2_f32(f32::NAN).is_nan());
        assert_eq!(exp2_f32(0.0), 1.0);
    }
}
