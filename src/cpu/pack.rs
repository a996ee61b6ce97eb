//! K and V as f32 tiles: the input element types (f32 read in place, f16/bf16 converted),
//! strided input rows ([`Input`], bounds checked once per call; the keys of a paged cache
//! through its block table, [`PageMap`]), the packed Kᵀ/V blocks of
//! a prefill call ([`SharedKv`]: one block per key tile of every prefill sequence, padded
//! line-aligned strides) and
//! the two buffers kept for them between calls, bounded by `FUSED_ATTN_CPU_KEEP_MIB` and
//! freed by [`super::release_cpu_buffers`].

use candle_core::{bail, Result, WithDType};
use half::{bf16, f16, slice::HalfFloatSliceExt};
use rayon::prelude::*;
use std::sync::{Mutex, OnceLock};

use crate::problem::Strides;

/// Keys per tile: the `S` tile is `ROWS_PER_ITEM × KEYS_PER_TILE` f32. Measured:
/// `lab/cpu-history.md`.
pub(super) const KEYS_PER_TILE: usize = 256;
/// The row stride of the `S` tile.
pub(super) const S_LD: usize = padded_stride(KEYS_PER_TILE);

/// An input element type. f32 is read in place; f16/bf16 are converted per tile.
pub(super) trait Element: WithDType {
    fn to_f32(src: &[Self], dst: &mut [f32]);
    fn from_f32(src: &[f32], dst: &mut [Self]);
    /// The data as f32 when it already is f32 (then K/V tiles need no conversion).
    fn as_f32(src: &[Self]) -> Option<&[f32]>;
    /// `dst[u] = (bf16(src[2u]), bf16(src[2u+1]))` as one u32, low half first: the bf16
    /// pair layout's Kᵀ rows (only bf16 inputs take that layout, where this is exact).
    fn to_bf16_pairs(src: &[Self], dst: &mut [u32]) {
        for (o, p) in dst.iter_mut().zip(src.chunks_exact(2)) {
            let b = |x: Self| bf16::from_f32(x.to_f64() as f32).to_bits() as u32;
            *o = b(p[0]) | (b(p[1]) << 16);
        }
    }
    /// `dst[c] = (bf16(lo[c]), bf16(hi[c]))` as the f32 whose bits are the pair: the bf16
    /// pair layout's V rows.
    fn interleave_bf16(lo: &[Self], hi: &[Self], dst: &mut [f32]) {
        let b = |x: Self| bf16::from_f32(x.to_f64() as f32).to_bits() as u32;
        for ((o, &l), &h) in dst.iter_mut().zip(lo).zip(hi) {
            *o = f32::from_bits(b(l) | (b(h) << 16));
        }
    }
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
        // `bf16::from_f32` without branches, so that it vectorizes: round to nearest even
        // by adding 0x7fff and the kept low bit; NaN stays NaN (made quiet).
        for (o, &x) in dst.iter_mut().zip(src) {
            let b = x.to_bits();
            let nan = b & 0x7fff_ffff > 0x7f80_0000;
            let r = if nan { (b >> 16) | 0x40 } else { (b + 0x7fff + ((b >> 16) & 1)) >> 16 };
            *o = bf16::from_bits(r as u16);
        }
    }
    fn as_f32(_: &[bf16]) -> Option<&[f32]> {
        None
    }
    #[inline(always)]
    fn to_bf16_pairs(src: &[bf16], dst: &mut [u32]) {
        for (o, p) in dst.iter_mut().zip(src.chunks_exact(2)) {
            *o = p[0].to_bits() as u32 | ((p[1].to_bits() as u32) << 16);
        }
    }
    #[inline(always)]
    fn interleave_bf16(lo: &[bf16], hi: &[bf16], dst: &mut [f32]) {
        for ((o, l), h) in dst.iter_mut().zip(lo).zip(hi) {
            *o = f32::from_bits(l.to_bits() as u32 | ((h.to_bits() as u32) << 16));
        }
    }
}

/// One strided `(batch, seq, heads, head_dim)` input, or the keys of one sequence of a
/// paged cache ([`PageMap`]).
#[derive(Clone, Copy)]
pub(super) struct Input<'a, T> {
    pub data: &'a [T],
    pub st: Strides,
    /// Paged: row `s` lies in block `table[s / size]`, `st.batch` is unused.
    pub pages: Option<PageMap<'a>>,
}

/// Where the keys of one sequence of a paged cache lie: key `s` is row `s % size` of block
/// `table[s / size]`, blocks `block` elements apart.
#[derive(Clone, Copy, Debug)]
pub(super) struct PageMap<'a> {
    pub table: &'a [u32],
    pub size: usize,
    pub block: usize,
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
        Ok(Self { data, st, pages: None })
    }

    /// The `keys` keys of one sequence of a paged cache of `num_blocks` blocks of
    /// `pages.size` rows of `heads` heads: checks that the table covers the keys, that its
    /// entries (those the keys use) are blocks of the cache and that every row of every
    /// block lies inside `data`.
    pub fn paged(
        (data, st): (&'a [T], Strides),
        pages: PageMap<'a>,
        (num_blocks, keys, heads): (usize, usize, usize),
        d: usize,
        name: &str,
    ) -> Result<Self> {
        let used = keys.div_ceil(pages.size);
        if used > pages.table.len() || pages.table[..used].iter().any(|&blk| blk as usize >= num_blocks) {
            bail!("fused-attn cpu: {name}: a block table entry lies outside the cache's {num_blocks} blocks")
        }
        if num_blocks > 0 && heads > 0 {
            let last =
                st.offset + (num_blocks - 1) * pages.block + (pages.size - 1) * st.seq + (heads - 1) * st.head + d;
            if last > data.len() {
                bail!(
                    "fused-attn cpu: paged {name} layout {st:?} reaches element {last} of a {}-element buffer",
                    data.len()
                )
            }
        }
        Ok(Self { data, st, pages: Some(pages) })
    }

    /// The same rows from row `s0` on, batch entry `b`: row `(0, s, h)` of the result is
    /// row `(b, s0 + s, h)` of `self` (unpaged only).
    pub fn shifted(&self, b: usize, s0: usize) -> Self {
        debug_assert!(self.pages.is_none());
        let st = Strides { offset: self.st.offset + b * self.st.batch + s0 * self.st.seq, ..self.st };
        Self { st, ..*self }
    }

    #[inline(always)]
    pub fn start(&self, b: usize, s: usize, h: usize) -> usize {
        match &self.pages {
            None => self.st.offset + b * self.st.batch + s * self.st.seq + h * self.st.head,
            Some(pm) => {
                self.st.offset
                    + pm.table[s / pm.size] as usize * pm.block
                    + (s % pm.size) * self.st.seq
                    + h * self.st.head
            }
        }
    }

    #[inline(always)]
    pub fn row(&self, b: usize, s: usize, h: usize, d: usize) -> &'a [T] {
        &self.data[self.start(b, s, h)..][..d]
    }

    /// Whether rows `s..s + n` (n ≥ 1) lie `st.seq` apart (always unpaged; within one page
    /// paged).
    #[inline(always)]
    pub fn uniform(&self, s: usize, n: usize) -> bool {
        match &self.pages {
            None => true,
            Some(pm) => s / pm.size == (s + n - 1) / pm.size,
        }
    }
}

/// K transposed and V, in f32, laid out for gemm and the `avx2.rs` kernels, one block per
/// (slot, key tile of KEYS_PER_TILE keys, kv head), in that order; a slot is one batch entry of
/// a dense call or one sequence of a packed one. A block of Kᵀ holds
/// `kt[t·KT_LD + jj] = k[b, j0 + jj, kvh, t]`, a block of V `v[jj·v_ld + c] = v[b, j0 + jj,
/// kvh, c]`: the `d` rows of one tile's Kᵀ lie together (68 KiB at d = 64) instead of `d`
/// pages apart, and one tile of every kv head is prepared from the same input pages, read
/// once in order (prepared head by head, each page was visited once per head, and the
/// preparation took 5–9 ms of a 150 ms call on 2 threads). Blocks start on a 64-byte line.
/// O(Sk·D) per kv head (the size of K and V themselves), never Sq×Sk.
pub(super) struct SharedKv {
    /// The first float of the Kᵀ blocks and of the V blocks: in `owned` ([`SharedKv::new`])
    /// or in a [`KvRing`] that outlives this ([`SharedKv::view`]). Read and written only
    /// through these pointers, tile by tile (a wave's tiles are written while another wave's
    /// are read).
    kt: *mut f32,
    v: *mut f32,
    owned: Option<(PooledBuffer, PooledBuffer)>,
    pub v_ld: usize,
    kv_heads: usize,
    /// Per slot (sequence), the index of its first tile; `slots + 1` entries.
    tile_base: Vec<usize>,
    head_dim: usize,
    /// The blocks hold bf16 pairs ([`SharedKv::new`]) rather than f32.
    pub pairs: bool,
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
pub(super) const fn padded_stride(n: usize) -> usize {
    let lines = n.div_ceil(16);
    16 * if lines.is_multiple_of(4) { lines + 1 } else { lines }
}

/// The buffers of the last calls' [`SharedKv`], kept for the next call. Freshly allocated,
/// the two buffers (19 MiB at (1,16,16,2048,2048,64)) cost one page fault per 4 KiB on
/// first touch; those faults made up most of the 25–32 ms that preparing K and V took per
/// call single-thread, out of 290–390 ms. Kept: the largest buffers seen, the size of a
/// call's K and V in f32 (never Sq×Sk; a pipelined packed call's [`KvRing`] takes a second
/// pair, each pair the size of its largest wave), while all of them together stay within
/// [`keep_limit_bytes`]; [`super::release_cpu_buffers`] frees them.
static POOL: Pool = Pool::new();

/// The environment variable that bounds the memory [`POOL`] keeps, in MiB.
pub(super) const KEEP_MIB_VAR: &str = "FUSED_ATTN_CPU_KEEP_MIB";
/// The bound when [`KEEP_MIB_VAR`] is unset: K and V in f32 of, e.g., 16k keys × 8 kv
/// heads × d = 128 with their padding.
pub(super) const DEFAULT_KEEP_MIB: usize = 256;

/// The most bytes the kept buffers may hold together: [`KEEP_MIB_VAR`] MiB, read once;
/// an error names the variable and its value when it is not a whole number.
pub(super) fn keep_limit_bytes() -> Result<usize> {
    static LIMIT: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    let limit = LIMIT.get_or_init(|| match std::env::var(KEEP_MIB_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_KEEP_MIB << 20),
        Ok(s) => s
            .trim()
            .parse::<usize>()
            .map(|mib| mib.saturating_mul(1 << 20))
            .map_err(|_| format!("fused-attn cpu: {KEEP_MIB_VAR} must be a whole number of MiB, got {s:?}")),
        Err(e) => Err(format!("fused-attn cpu: {KEEP_MIB_VAR}: {e}")),
    });
    limit.clone().map_err(candle_core::Error::Msg)
}

/// Frees the kept K/V buffers, and returns how many bytes they held. A call running
/// meanwhile gives its buffers back when it ends.
pub(super) fn release_kv_buffers() -> usize {
    POOL.release()
}

/// An output buffer for a call's `n` results: capacity `n`, length 0, for a caller that
/// writes every element before `set_len` ([`super::forward`](mod@super::forward)).
///
/// Outputs above glibc's largest mmap threshold (32 MiB) come as fresh pages from the
/// kernel on every call, and the first write of each 4 KiB page faults: a packed batch's
/// 41 MiB f32 output took 10131 faults per call on the dev Xeon (a VM), where a first touch
/// of 41 MiB costs 12.7 ms with 4 KiB pages and 4.7 ms with 2 MiB pages. Buffers of at
/// least [`HUGE_MIN_BYTES`] therefore ask for transparent huge pages (`MADV_HUGEPAGE`,
/// Linux) over their 2 MiB-aligned interior before anything touches them; measured on
/// that batch (`bench_cpu --varlen`), 933 faults per call and 2-4% less time. Where the
/// kernel refuses or has THP off, nothing changes. A caller that keeps its output buffer
/// between calls (`attention_varlen_into`) pays none of these faults.
pub(super) fn output_buffer<T: WithDType>(n: usize) -> candle_core::Result<Vec<T>> {
    let mut v: Vec<T> = crate::alloc::try_capacity(n, "the output")?;
    let bytes = n * size_of::<T>();
    advise_huge_pages(v.as_mut_ptr().cast(), bytes);
    prefault(v.as_mut_ptr().cast(), bytes);
    Ok(v)
}

/// Touches every page of the `len` bytes at `ptr` (a fresh allocation, not yet read), in
/// 2 MiB pieces spread over the rayon pool, so that the kernel's zeroing of fresh pages runs
/// before the call's work, evenly over its threads, instead of page by page in the middle of
/// it (where a huge page's 2 MiB of zeroing also flushes the packed K/V out of the cache).
/// Buffers under [`HUGE_MIN_BYTES`] are left alone; `FUSED_ATTN_CPU_PREFAULT=0` turns it off
/// (for A/Bs). Measured (`bench_cpu --varlen`, f32 causal): the packed batch against a loop of
/// dense calls 0.94 -> 0.97 on a 2-vCPU Zen 4 VM, 0.963-0.967 -> 0.976 on a Sapphire Rapids host.
fn prefault(ptr: *mut u8, len: usize) {
    const PIECE: usize = 2 << 20;
    const PAGE: usize = 4096;
    if len < HUGE_MIN_BYTES || std::env::var_os("FUSED_ATTN_CPU_PREFAULT").is_some_and(|x| x == "0") {
        return;
    }
    let base = ptr as usize;
    (0..len.div_ceil(PIECE)).into_par_iter().for_each(|i| {
        let end = ((i + 1) * PIECE).min(len);
        let mut at = i * PIECE;
        while at < end {
            // SAFETY: `at < len`, so the byte lies in the caller's allocation of `len` bytes at
            // `ptr`, which nothing reads before the call writes it; the pieces are disjoint.
            unsafe { std::ptr::write_volatile((base + at) as *mut u8, 0) };
            at += PAGE;
        }
    });
}

/// Buffers from this size on ask for huge pages ([`output_buffer`]).
const HUGE_MIN_BYTES: usize = 8 << 20;

/// `madvise(MADV_HUGEPAGE)` over the 2 MiB-aligned part of `len` bytes at `ptr`; errors
/// are ignored (the advice is only a hint).
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        const MADV_HUGEPAGE: i32 = 14;
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        if len < HUGE_MIN_BYTES {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: [start, end) lies inside the caller's live allocation of `len` bytes
            // at `ptr`, and MADV_HUGEPAGE changes only how its pages are backed, never
            // their contents or mapping.
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Which of the kept buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// Kᵀ blocks.
    Kt = 0,
    /// V blocks.
    V = 1,
    /// The second Kᵀ and V buffers of a [`KvRing`] (the waves of a packed call alternate
    /// between two).
    Kt2 = 2,
    V2 = 3,
}

/// The number of [`Slot`]s.
const SLOTS: usize = 4;

/// One kept buffer per [`Slot`].
pub(super) struct Pool {
    slots: Mutex<[Vec<f32>; SLOTS]>,
}

impl Pool {
    const fn new() -> Self {
        Self { slots: Mutex::new([Vec::new(), Vec::new(), Vec::new(), Vec::new()]) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Vec<f32>; SLOTS]> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The buffer of `slot`, leaving the slot empty (a call that finds it empty, because
    /// another call holds it, allocates its own).
    fn take_vec(&self, slot: Slot) -> Vec<f32> {
        std::mem::take(&mut self.lock()[slot as usize])
    }

    /// Keeps `buf` in `slot` when it is larger than the buffer kept there and the slots
    /// then hold at most `limit` bytes together; frees it otherwise.
    fn give_back(&self, slot: Slot, buf: Vec<f32>, limit: usize) {
        let mut slots = self.lock();
        let other: usize =
            (0..SLOTS).filter(|&x| x != slot as usize).map(|x| slots[x].capacity() * size_of::<f32>()).sum();
        if buf.capacity() > slots[slot as usize].capacity() && buf.capacity() * size_of::<f32>() + other <= limit {
            let old = std::mem::replace(&mut slots[slot as usize], buf);
            drop(slots);
            drop(old);
        }
    }

    /// Frees both buffers; returns the bytes they held.
    fn release(&self) -> usize {
        let freed = std::mem::take(&mut *self.lock());
        freed.iter().map(|b| b.capacity() * size_of::<f32>()).sum()
    }
}

/// A `Vec<f32>` taken from a [`Pool`] slot and given back on drop, seen as `len` floats
/// from its first 64-byte line boundary.
struct PooledBuffer {
    buf: Vec<f32>,
    start: usize,
    len: usize,
    pool: &'static Pool,
    slot: Slot,
}

/// Floats in a 64-byte cache line.
const LINE_FLOATS: usize = 16;

impl PooledBuffer {
    /// Floats that a previous call left are not cleared: the callers write every float
    /// they read.
    fn take(pool: &'static Pool, slot: Slot, len: usize) -> Self {
        let mut buf = pool.take_vec(slot);
        buf.truncate(len + LINE_FLOATS);
        buf.resize(len + LINE_FLOATS, 0.0);
        // At most 15 floats: the allocation is 4-byte aligned.
        let start = buf.as_ptr().align_offset(4 * LINE_FLOATS);
        Self { buf, start, len, pool, slot }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        // `forward` read the limit before any buffer was taken, so it is valid here.
        let limit = keep_limit_bytes().unwrap_or(0);
        self.pool.give_back(self.slot, std::mem::take(&mut self.buf), limit);
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
    /// Packs the keys of every slot: slot `i` is `(k, v, sk)`, the `sk` keys of one
    /// sequence (row `(0, j, kvh)` of `k` and `v` is key `j`); a slot with no keys packs
    /// nothing (the sequences of a packed call that do not pack their keys).
    ///
    /// With `pairs` (bf16 inputs on the `avx512-bf16` and `avx512-amx` paths, `d` even) the
    /// blocks hold bf16 pairs in 4-byte elements instead of f32: a Kᵀ block `d/2` pair rows,
    /// `kt[u·KT_LD + jj] = (k[j0+jj][2u], k[j0+jj][2u+1])`, a V block `KEYS_PER_TILE/2` pair
    /// rows, `v[w·v_ld + c] = (v[j0+2w][c], v[j0+2w+1][c])`, low half first; keys past the
    /// last one are zero in both.
    pub fn new<T: Element>(slots: &[(Input<'_, T>, Input<'_, T>, usize)], hkv: usize, d: usize, pairs: bool) -> Self {
        let (kt_len, v_len) = Self::lens(slots, hkv, d);
        let mut kt = PooledBuffer::take(&POOL, Slot::Kt, kt_len);
        let mut vf = PooledBuffer::take(&POOL, Slot::V, v_len);
        let (kt_ptr, v_ptr) = (kt.as_mut_ptr(), vf.as_mut_ptr());
        // SAFETY: the two buffers hold `lens` floats and move into the result with it.
        let mut kv = unsafe { Self::view(kt_ptr, v_ptr, slots, hkv, d, pairs) };
        kv.owned = Some((kt, vf));
        let avx2 = has_avx2();
        (0..kv.tiles()).into_par_iter().for_each(|t| {
            // SAFETY: each tile is packed once, by one task, and nothing reads the blocks
            // before `new` returns.
            unsafe { kv.pack_tile(slots, t, avx2) }
        });
        kv
    }

    /// The floats of the Kᵀ and of the V blocks of `slots` (as for [`SharedKv::new`]).
    pub fn lens<T>(slots: &[(Input<'_, T>, Input<'_, T>, usize)], hkv: usize, d: usize) -> (usize, usize) {
        let n_tiles: usize = slots.iter().map(|(_, _, sk)| sk.div_ceil(KEYS_PER_TILE)).sum();
        (n_tiles * hkv * d * KT_LD, n_tiles * hkv * KEYS_PER_TILE * padded_stride(d))
    }

    /// The blocks of `slots` laid out over `kt` and `v` (at least [`SharedKv::lens`] floats
    /// each), not yet packed ([`SharedKv::pack_tile`]).
    ///
    /// # Safety
    /// `kt` and `v` point to that many floats, which outlive the result and which nothing
    /// else accesses while it lives except through it.
    pub unsafe fn view<T>(
        kt: *mut f32,
        v: *mut f32,
        slots: &[(Input<'_, T>, Input<'_, T>, usize)],
        hkv: usize,
        d: usize,
        pairs: bool,
    ) -> Self {
        debug_assert!(!pairs || d.is_multiple_of(2));
        let mut tile_base = Vec::with_capacity(slots.len() + 1);
        tile_base.push(0);
        for (_, _, sk) in slots {
            tile_base.push(tile_base[tile_base.len() - 1] + sk.div_ceil(KEYS_PER_TILE));
        }
        Self { kt, v, owned: None, v_ld: padded_stride(d), kv_heads: hkv, tile_base, head_dim: d, pairs }
    }

    /// The key tiles of every slot.
    pub fn tiles(&self) -> usize {
        self.tile_base[self.tile_base.len() - 1]
    }

    /// Packs global tile `t` (of `slots`, those the layout was made for) of every kv head.
    /// `avx2`: the CPU has AVX2 and FMA ([`has_avx2`]).
    ///
    /// # Safety
    /// No other thread reads or writes tile `t`'s blocks meanwhile.
    pub unsafe fn pack_tile<T: Element>(&self, slots: &[(Input<'_, T>, Input<'_, T>, usize)], t: usize, avx2: bool) {
        let (d, hkv, v_ld) = (self.head_dim, self.kv_heads, self.v_ld);
        let (kt_block, v_block) = (d * KT_LD, KEYS_PER_TILE * v_ld);
        // SAFETY: tile t's blocks lie inside the buffers (`lens`), and the caller's contract
        // gives this call the only access to them.
        let (kt, vf) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.kt.add(t * hkv * kt_block), hkv * kt_block),
                std::slice::from_raw_parts_mut(self.v.add(t * hkv * v_block), hkv * v_block),
            )
        };
        // The slot holding global tile t (empty slots share their base with the next).
        let slot = self.tile_base.partition_point(|&x| x <= t) - 1;
        let (k, v, sk) = &slots[slot];
        let j0 = (t - self.tile_base[slot]) * KEYS_PER_TILE;
        let jb = KEYS_PER_TILE.min(sk - j0);
        if self.pairs {
            pack_pairs_tile(k, v, (j0, jb), d, v_ld, (kt, kt_block), (vf, v_block));
            return;
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = avx2;
        let mut rows = [[0f32; crate::problem::MAX_HEAD_DIM]; TRANSPOSE_KEYS];
        for g0 in (0..jb).step_by(TRANSPOSE_KEYS) {
            let keys = TRANSPOSE_KEYS.min(jb - g0);
            for (kvh, (kt, vf)) in kt.chunks_exact_mut(kt_block).zip(vf.chunks_exact_mut(v_block)).enumerate() {
                for (jj, row) in (g0..g0 + keys).zip(&mut rows) {
                    T::to_f32(k.row(0, j0 + jj, kvh, d), &mut row[..d]);
                    T::to_f32(v.row(0, j0 + jj, kvh, d), &mut vf[jj * v_ld..][..d]);
                }
                #[cfg(target_arch = "x86_64")]
                if keys == TRANSPOSE_KEYS && avx2 {
                    // SAFETY: the CPU has AVX2 and FMA; `rows` holds 8 rows of d ≤
                    // MAX_HEAD_DIM floats; the block has d rows of KT_LD ≥ g0 + 8 floats.
                    unsafe {
                        super::avx2::transpose8(
                            rows.as_ptr().cast(),
                            crate::problem::MAX_HEAD_DIM,
                            d,
                            kt[g0..].as_mut_ptr(),
                            KT_LD,
                        )
                    };
                    continue;
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
    }

    /// The index of the block of keys `j0..` (a multiple of KEYS_PER_TILE) of kv head `kvh`
    /// in slot `slot`.
    fn block(&self, slot: usize, kvh: usize, j0: usize) -> usize {
        (self.tile_base[slot] + j0 / KEYS_PER_TILE) * self.kv_heads + kvh
    }

    /// Kᵀ of keys `j0..`: `d` rows of KEYS_PER_TILE keys at stride KT_LD.
    pub fn kt_tile(&self, slot: usize, kvh: usize, j0: usize) -> *const f32 {
        // In bounds: the block of a key the slot has lies inside the buffer (`lens`).
        self.kt.wrapping_add(self.block(slot, kvh, j0) * self.head_dim * KT_LD)
    }

    /// V of keys `j0..`: KEYS_PER_TILE rows of `d` at stride `v_ld`.
    pub fn v_tile(&self, slot: usize, kvh: usize, j0: usize) -> *const f32 {
        self.v.wrapping_add(self.block(slot, kvh, j0) * KEYS_PER_TILE * self.v_ld)
    }
}

// SAFETY: the blocks behind the pointers are accessed tile by tile, each tile written by one
// thread (`pack_tile`, whose callers order every read of a tile after its writing) and
// otherwise only read; `owned` is plain memory.
unsafe impl Send for SharedKv {}
// SAFETY: as above.
unsafe impl Sync for SharedKv {}

/// Whether the CPU has AVX2 and FMA (the 8-key transposes of [`SharedKv::pack_tile`]).
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return super::has_feature("avx2") && super::has_feature("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Two pairs of Kᵀ/V buffers from the kept pool ([`Slot::Kt`]/[`Slot::V`] and
/// [`Slot::Kt2`]/[`Slot::V2`]): the waves of a packed call alternate between them, so that
/// one wave's keys are packed while the previous wave's items still read theirs.
pub(super) struct KvRing {
    bufs: [(PooledBuffer, PooledBuffer); 2],
}

impl KvRing {
    /// Buffers of `lens[i]` (Kᵀ, V) floats for the waves of parity `i`.
    pub fn take(lens: [(usize, usize); 2]) -> Self {
        let [(k0, v0), (k1, v1)] = lens;
        Self {
            bufs: [
                (PooledBuffer::take(&POOL, Slot::Kt, k0), PooledBuffer::take(&POOL, Slot::V, v0)),
                (PooledBuffer::take(&POOL, Slot::Kt2, k1), PooledBuffer::take(&POOL, Slot::V2, v1)),
            ],
        }
    }

    /// The Kᵀ and V buffers of each parity (for [`SharedKv::view`]). Take them once and
    /// derive every view from them: each call reborrows the buffers.
    pub fn ptrs(&mut self) -> [(*mut f32, *mut f32); 2] {
        let [(k0, v0), (k1, v1)] = &mut self.bufs;
        [(k0.as_mut_ptr(), v0.as_mut_ptr()), (k1.as_mut_ptr(), v1.as_mut_ptr())]
    }
}

/// One tile of every kv head in the bf16 pair layout of [`SharedKv::new`]: keys
/// `j0..j0 + jb` of `k` and `v` into the tile's Kᵀ blocks (`kt`, `kt_block` floats per kv
/// head) and V blocks (`vf`, `v_block` per kv head). A K row of `d` bf16 is `d/2` pairs, so
/// the Kᵀ block is a transpose of 4-byte elements, [`TRANSPOSE_KEYS`] keys at a time; a V
/// pair row interleaves two key rows.
fn pack_pairs_tile<T: Element>(
    k: &Input<'_, T>,
    v: &Input<'_, T>,
    (j0, jb): (usize, usize),
    d: usize,
    v_ld: usize,
    (kt, kt_block): (&mut [f32], usize),
    (vf, v_block): (&mut [f32], usize),
) {
    let half = d / 2;
    let zero = [T::zero(); crate::problem::MAX_HEAD_DIM];
    let mut rows = [[0u32; crate::problem::MAX_HEAD_DIM / 2]; TRANSPOSE_KEYS];
    // Keys outer, kv heads inner: the rows of one key of every kv head lie together in the
    // `(seq, heads, d)` layout, so the input is read once, in order.
    for g0 in (0..jb).step_by(TRANSPOSE_KEYS) {
        let keys = TRANSPOSE_KEYS.min(jb - g0);
        for (kvh, kt) in kt.chunks_exact_mut(kt_block).enumerate() {
            for (jj, row) in (g0..g0 + keys).zip(&mut rows) {
                T::to_bf16_pairs(k.row(0, j0 + jj, kvh, d), &mut row[..half]);
            }
            for (u, dst) in kt.chunks_exact_mut(KT_LD).take(half).enumerate() {
                for (x, row) in dst[g0..g0 + keys].iter_mut().zip(&rows) {
                    *x = f32::from_bits(row[u]);
                }
            }
        }
    }
    for kt in kt.chunks_exact_mut(kt_block) {
        // The missing keys of the last tile, which the score kernels' last blocks read.
        kt.chunks_exact_mut(KT_LD).take(half).for_each(|row| row[jb..KEYS_PER_TILE].fill(0.0));
    }
    for w in 0..KEYS_PER_TILE / 2 {
        let (a, b) = (2 * w, 2 * w + 1);
        for (kvh, vf) in vf.chunks_exact_mut(v_block).enumerate() {
            let lo = if a < jb { v.row(0, j0 + a, kvh, d) } else { &zero[..d] };
            let hi = if b < jb { v.row(0, j0 + b, kvh, d) } else { &zero[..d] };
            T::interleave_bf16(lo, hi, &mut vf[w * v_ld..][..d]);
        }
    }
}

/// The K or V tile of keys `j0..j0 + jb` of kv head `kvh` as f32 rows of `d` at the
/// returned stride: in place for f32 inputs whose rows lie at one stride (unpaged, or
/// within one page), else converted (copied) into `buf`.
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
        if x.uniform(j0, jb) {
            return (data[x.start(b, j0, kvh)..].as_ptr(), x.st.seq);
        }
    }
    buf.resize(jb * d, 0.0);
    for (jj, dst) in buf.chunks_exact_mut(d).enumerate() {
        T::to_f32(x.row(b, j0 + jj, kvh, d), dst);
    }
    (buf.as_ptr(), d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn pool_keeps_the_largest_buffers_within_the_limit_and_releases_them() {
        static P: Pool = Pool::new();
        let floats = |mib: usize| vec![0f32; mib * MIB / 4];
        P.give_back(Slot::Kt, floats(3), 10 * MIB);
        P.give_back(Slot::V, floats(4), 10 * MIB);
        assert_eq!(P.take_vec(Slot::Kt).capacity(), 3 * MIB / 4);
        P.give_back(Slot::Kt, floats(3), 10 * MIB);
        // Smaller than the kept one: freed.
        P.give_back(Slot::V, floats(2), 10 * MIB);
        assert_eq!(P.lock()[Slot::V as usize].capacity(), 4 * MIB / 4);
        // Larger, but 7 + 3 MiB would pass the 9 MiB limit: freed, the kept one stays.
        P.give_back(Slot::V, floats(7), 9 * MIB);
        assert_eq!(P.lock()[Slot::V as usize].capacity(), 4 * MIB / 4);
        // Within the limit: replaces the kept one.
        P.give_back(Slot::V, floats(6), 9 * MIB);
        assert_eq!(P.release(), 9 * MIB);
        assert_eq!(P.release(), 0);
        // A limit of 0 keeps nothing.
        P.give_back(Slot::Kt, floats(1), 0);
        assert_eq!(P.release(), 0);
    }
}
