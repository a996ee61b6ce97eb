//! K and V as f32 tiles: the input element types, strided input rows, the per-call packed
//! Kᵀ/V blocks ([`SharedKv`]) and the buffers kept for them between calls.

use candle_core::{bail, Result, WithDType};
use half::{bf16, f16, slice::HalfFloatSliceExt};
use rayon::prelude::*;
use std::sync::Mutex;

use crate::problem::{Problem, Strides};

/// Keys per tile: the `S` tile is `ROWS_PER_ITEM × KEYS_PER_TILE` f32 (module header).
pub(super) const KEYS_PER_TILE: usize = 256;
/// The row stride of the `S` tile.
pub(super) const S_LD: usize = padded_stride(KEYS_PER_TILE);

/// An input element type. f32 is read in place; f16/bf16 are converted per tile.
pub(super) trait Element: WithDType {
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
pub(super) struct Input<'a, T> {
    pub data: &'a [T],
    pub st: Strides,
}

impl<'a, T> Input<'a, T> {
    /// Checks that every `(b, s, h)` row of `d` elements lies inside `data`, which makes the
    /// strided tile reads below sound.
    pub fn new((data, st): (&'a [T], Strides), dims: (usize, usize, usize), d: usize, name: &str) -> Result<Self> {
        let (b, s, h) = dims;
        let last = st.offset + (b - 1) * st.batch + (s - 1) * st.seq + (h - 1) * st.head + d;
        if last > data.len() {
            bail!("fused-attn cpu: {name} layout {st:?} reaches element {last} of a {}-element buffer", data.len())
        }
        Ok(Self { data, st })
    }

    #[inline(always)]
    pub fn start(&self, b: usize, s: usize, h: usize) -> usize {
        self.st.offset + b * self.st.batch + s * self.st.seq + h * self.st.head
    }

    #[inline(always)]
    pub fn row(&self, b: usize, s: usize, h: usize, d: usize) -> &'a [T] {
        &self.data[self.start(b, s, h)..][..d]
    }
}

/// K transposed and V, in f32, laid out for gemm and the [`avx2`] kernels, one block per
/// (batch, key tile of KEYS_PER_TILE keys, kv head), in that order. A block of Kᵀ holds
/// `kt[t·KT_LD + jj] = k[b, j0 + jj, kvh, t]`, a block of V `v[jj·v_ld + c] = v[b, j0 + jj,
/// kvh, c]`: the `d` rows of one tile's Kᵀ lie together (68 KiB at d = 64) instead of `d`
/// pages apart, and one tile of every kv head is prepared from the same input pages, read
/// once in order (prepared head by head, each page was visited once per head, and the
/// preparation took 5–9 ms of a 150 ms call on 2 threads). Blocks start on a 64-byte line.
/// O(Sk·D) per kv head (the size of K and V themselves), never Sq×Sk.
pub(super) struct SharedKv {
    kt: PooledBuffer,
    v: PooledBuffer,
    pub v_ld: usize,
    kv_heads: usize,
    n_tiles: usize,
    head_dim: usize,
}

/// Keys transposed together: each Kᵀ row gets 32 contiguous bytes at a time rather than
/// one float, so that the `d` destination lines of the kv heads of a tile (64 KiB at 16
/// heads, d = 64) are not each written 8 times over.
const TRANSPOSE_KEYS: usize = 8;

/// The row stride of a stored Kᵀ tile.
pub(super) const KT_LD: usize = padded_stride(KEYS_PER_TILE);

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
    pub fn new<T: Element>(p: &Problem, k: &Input<'_, T>, v: &Input<'_, T>) -> Self {
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
    pub fn kt_tile(&self, b: usize, kvh: usize, j0: usize) -> *const f32 {
        self.kt[self.block(b, kvh, j0) * self.head_dim * KT_LD..].as_ptr()
    }

    /// V of keys `j0..`: KEYS_PER_TILE rows of `d` at stride `v_ld`.
    pub fn v_tile(&self, b: usize, kvh: usize, j0: usize) -> *const f32 {
        self.v[self.block(b, kvh, j0) * KEYS_PER_TILE * self.v_ld..].as_ptr()
    }
}

/// The K or V tile of keys `j0..j0 + jb` of kv head `kvh` as f32 rows of `d` at the
/// returned stride: in place for f32 inputs, else converted into `buf`.
#[inline(always)]
pub(super) fn kv_tile<T: Element>(
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
