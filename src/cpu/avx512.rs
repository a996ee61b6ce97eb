//! AVX-512 micro-kernels for the two tile products of a prefill item, in two flavours of
//! one register-blocked loop: f32 FMAs (`vfmadd231ps`, any head dim; the
//! `avx512-kernels` path and the f32 inputs of the bf16 paths), and bf16 pair dot products
//! with f32 accumulation (`vdpbf16ps`, the `avx512-bf16` path's bf16 inputs, on the bf16
//! pair layout of `SharedKv`). The softmax's row max, `2^x` pass and the rounding of `P`
//! to bf16 are here too.
//!
//! Both products keep a block of the output in 24 zmm registers and stream the shared
//! operand (Kᵀ or V) in rows, one broadcast of the per-row operand (Q or P) feeding the
//! block's multiply-adds of that row: 12 rows × 32 columns, and in f32 `P V` 6 rows × 64
//! columns for each whole 64-column slice (10 loads per 24 FMAs instead of 14). The row
//! stride of the broadcast operand is a constant where it can be (P's always; Q's for
//! d = 64 and 128), so each broadcast addresses a pointer plus a displacement: through a
//! run-time stride the compiler chained one addition per row, serially, on the FMA ports
//! (`lab/cpu-history.md`, issue 15 round 3). The `P V` kernel applies the online softmax's
//! rescale of the accumulator as it loads it, and masks its last column block when
//! `d % 16 != 0`.
//!
//! In the bf16 flavour each 32-bit lane holds a pair of bf16 along the reduced dimension:
//! Kᵀ pair row `u` lane `j` is `(k[j][2u], k[j][2u+1])`, V pair row `w` lane `c` is
//! `(v[2w][c], v[2w+1][c])`, and the broadcast operand is the matching pair of Q (or of P
//! rounded to bf16). `vdpbf16ps` adds both products (exact in f32) to the f32 lane, so the
//! same loop runs over `d/2` (or `keys/2`) pair rows.
//!
//! The decode kernels ([`direct_scores`], [`direct_pv`]) take a few query rows (≤ 8) of
//! one kv head against up to 16 K or V rows in place (f32, or bf16 converted in
//! registers): the scores as 16 dot products at a time summed across lanes together, `P V`
//! with the accumulators of 32 columns in registers over the keys.
//!
//! Measured (dev Xeon, 2 threads, quiet): the (1,16,16,2048,2048,64) f32 row in 74 ms, 70%
//! of the FMA peak at the nominal 2.6 GHz, against 105 ms with the AVX2 kernels; single
//! thread the two products take 35% of the time each, at the FMA rate. The `vdpbf16ps`
//! flavour ran slower than the f32 one there (206 against 153 ms at the bf16 2048 row,
//! load 7), and cannot do better: `vdpbf16ps` zmm retires one per 2 cycles on these cores
//! against two `vfmadd231ps` per cycle, half the f32 flop rate (`bench_cpu --peaks`: 110
//! against 220 GFLOP/s per core), and its two kernels already run at about that 110
//! (one thread, the bf16 512 row). The record: `lab/cpu-history.md` (issue 15's section).

use std::arch::x86_64::*;

use super::softmax::{exp2_f32, EXP2_MIN, EXP2_POLY, EXP2_ROUND};

/// Rows of one register block.
const MR: usize = 12;

/// One multiply-add step: f32 `acc + a·b`, or (`BF16`) `acc + a.lo·b.lo + a.hi·b.hi` over
/// the bf16 pairs of each lane.
///
/// # Safety
/// The CPU has AVX-512F, and AVX512-BF16 when `BF16` (the calling kernels' target features).
#[inline(always)]
unsafe fn madd<const BF16: bool>(acc: __m512, a: __m512, b: __m512) -> __m512 {
    // SAFETY: the kernels that inline this have AVX-512F, and AVX512-BF16 when `BF16`.
    unsafe {
        if BF16 {
            _mm512_dpbf16_ps(
                acc,
                std::mem::transmute::<__m512, __m512bh>(a),
                std::mem::transmute::<__m512, __m512bh>(b),
            )
        } else {
            _mm512_fmadd_ps(a, b, acc)
        }
    }
}

/// The 4 bytes at `p` (an f32, or a bf16 pair) in every lane.
///
/// # Safety
/// 4 bytes at `p` are readable; the CPU has AVX-512F.
#[inline(always)]
unsafe fn bcast(p: *const f32) -> __m512 {
    // SAFETY: the caller's pointer is readable; the kernels have AVX-512F.
    unsafe { _mm512_set1_ps(p.read()) }
}

/// `s[r·s_ld + j] = Σ_{t < n} a[r·a_ld + t] ⊙ b[t·b_ld + j]` for `r < rows`,
/// `j < 16·⌈cols/16⌉`, in 4-byte elements (f32, or bf16 pairs with `BF16`): the score tile
/// (`a` = Q rows, `b` = a Kᵀ panel, `n` = d or d/2 pair rows).
///
/// # Safety
/// The CPU has AVX-512F (and AVX512-BF16 with `BF16`); `a` holds `rows` rows of `n`
/// readable elements at stride `a_ld`; `b` holds `n` rows of `16·⌈cols/16⌉` readable
/// elements at stride `b_ld`; `s` has `rows` rows of `16·⌈cols/16⌉` writable floats at
/// stride `s_ld`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scores_body<const BF16: bool, const A_LD: usize>(
    a: *const f32,
    a_ld: usize,
    rows: usize,
    n: usize,
    b: *const f32,
    b_ld: usize,
    cols: usize,
    s: *mut f32,
    s_ld: usize,
) {
    let mut j = 0;
    while j < cols {
        let two = j + 16 < cols;
        let mut r = 0;
        while r < rows {
            let rb = MR.min(rows - r);
            // SAFETY: rows r..r + rb and columns j..j + 16 (32 when `two`) are inside the
            // caller's bounds.
            unsafe {
                let a = a.add(r * if A_LD == 0 { a_ld } else { A_LD });
                let (s, b) = (s.add(r * s_ld + j), b.add(j));
                macro_rules! go {
                    ($($n:literal)*) => {
                        match (rb, two) {
                            $(($n, true) => scores_block::<$n, 2, BF16, A_LD>(a, a_ld, n, b, b_ld, s, s_ld),
                              ($n, false) => scores_block::<$n, 1, BF16, A_LD>(a, a_ld, n, b, b_ld, s, s_ld),)*
                            _ => unreachable!(),
                        }
                    };
                }
                go!(1 2 3 4 5 6 7 8 9 10 11 12);
            }
            r += rb;
        }
        j += if two { 32 } else { 16 };
    }
}

/// One `R × 16·V` block of [`scores_body`].
///
/// # Safety
/// As [`scores_body`], for `R` rows and `16·V` columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scores_block<const R: usize, const V: usize, const BF16: bool, const A_LD: usize>(
    a: *const f32,
    a_ld: usize,
    n: usize,
    b: *const f32,
    b_ld: usize,
    s: *mut f32,
    s_ld: usize,
) {
    // SAFETY: every access is inside the caller's rows and columns.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        for t in 0..n {
            let mut bt = [_mm512_setzero_ps(); V];
            for (c, x) in bt.iter_mut().enumerate() {
                *x = _mm512_loadu_ps(b.add(t * b_ld + 16 * c));
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                // A constant row stride: each broadcast is one pointer plus a displacement
                // (no chain of row-stride additions).
                let x = bcast(a.add(r * if A_LD == 0 { a_ld } else { A_LD } + t));
                for (acc, &y) in acc.iter_mut().zip(&bt) {
                    *acc = madd::<BF16>(*acc, x, y);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (c, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(s.add(r * s_ld + 16 * c), *acc);
            }
        }
    }
}

/// `acc[r·d + c] = corr[r]·acc[r·d + c] + Σ_{w < n} p[r·p_ld + w] ⊙ v[w·v_ld + c]` for
/// `r < rows`, `c < d`, in 4-byte elements (f32, or bf16 pairs with `BF16`): the online
/// softmax's rescale folded into the accumulator loads, then `P V` (`n` = keys, or key
/// pairs). `p_ld` is the constant `P_LD`, so that each broadcast of P is one pointer plus
/// a displacement rather than a chain of stride additions.
///
/// # Safety
/// The CPU has AVX-512F (and AVX512-BF16 with `BF16`); `acc` holds `rows·d` floats and
/// `corr` `rows`; `p` holds `rows` rows of `n` readable elements at stride `p_ld`; `v`
/// holds `n` rows of `d` readable elements at stride `v_ld`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate_body<const BF16: bool, const P_LD: usize>(
    acc: *mut f32,
    corr: *const f32,
    d: usize,
    rows: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    n: usize,
) {
    // Keys in chunks, each over every block: a block's V slice and P rows of one chunk
    // (16 + 6 KiB in f32) stay in L1 where a whole 256-key tile's (32 + 12 KiB) did not;
    // the accumulators go through memory once per chunk.
    for w0 in (0..n).step_by(KEY_CHUNK) {
        let nc = KEY_CHUNK.min(n - w0);
        // SAFETY: the chunk's P columns and V rows are inside the caller's bounds.
        let (p, v) = unsafe { (p.add(w0), v.add(w0 * v_ld)) };
        // SAFETY: as the caller's, for keys w0..w0 + nc; only the first chunk rescales.
        unsafe { accumulate_chunk::<BF16, P_LD>(acc, corr, w0 == 0, d, rows, p, v, v_ld, nc) };
    }
}

/// Elements (keys, or key pairs) per chunk of [`accumulate_body`].
const KEY_CHUNK: usize = 64;

/// [`accumulate_body`] over `n` elements, rescaling the accumulators by `corr` only when
/// `scale`.
///
/// # Safety
/// As [`accumulate_body`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate_chunk<const BF16: bool, const P_LD: usize>(
    acc: *mut f32,
    corr: *const f32,
    scale: bool,
    d: usize,
    rows: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    n: usize,
) {
    let mut c = 0;
    // 64-column slices first, in blocks of MR/2 rows × 4 vectors: per key one V row of 4
    // vectors serves 6 broadcasts of P (10 loads per 24 FMAs, against 14 in 12 × 32).
    // Measured (dev Xeon, one item's tiles walked as the forward does): 175 → 194 GFLOP/s
    // single-thread. The score tile keeps 12 × 32 blocks: 6 × 64 ran slower there.
    // Each accumulator sums the same products in the same key order either way.
    if !BF16 {
        while d - c >= 64 {
            let mut r = 0;
            while r < rows {
                let rb = (MR / 2).min(rows - r);
                // SAFETY: rows r..r + rb and columns c..c + 64 are inside the caller's bounds.
                unsafe {
                    let (acc, corr, p, v) = (acc.add(r * d + c), corr.add(r), p.add(r * P_LD), v.add(c));
                    macro_rules! go {
                        ($($n:literal)*) => {
                            match rb {
                                $($n => accumulate_block::<$n, 4, BF16, P_LD>(acc, corr, scale, d, p, v, v_ld, n, 0xffff),)*
                                _ => unreachable!(),
                            }
                        };
                    }
                    go!(1 2 3 4 5 6);
                }
                r += rb;
            }
            c += 64;
        }
    }
    while c < d {
        let left = d - c;
        let (two, mask) = if left >= 32 {
            (true, 0xffff)
        } else if left > 16 {
            (true, (1u32 << (left - 16)).wrapping_sub(1) as u16)
        } else {
            (false, if left == 16 { 0xffff } else { ((1u32 << left) - 1) as u16 })
        };
        let mut r = 0;
        while r < rows {
            let rb = MR.min(rows - r);
            // SAFETY: rows r..r + rb and the masked columns c..c + 32 (or 16) are inside the
            // caller's bounds.
            unsafe {
                let (acc, corr, p, v) = (acc.add(r * d + c), corr.add(r), p.add(r * P_LD), v.add(c));
                macro_rules! go {
                    ($($n:literal)*) => {
                        match (rb, two) {
                            $(($n, true) => accumulate_block::<$n, 2, BF16, P_LD>(acc, corr, scale, d, p, v, v_ld, n, mask),
                              ($n, false) => accumulate_block::<$n, 1, BF16, P_LD>(acc, corr, scale, d, p, v, v_ld, n, mask),)*
                            _ => unreachable!(),
                        }
                    };
                }
                go!(1 2 3 4 5 6 7 8 9 10 11 12);
            }
            r += rb;
        }
        c += if two { 32 } else { 16 };
    }
}

/// One `R × 16·V` block of [`accumulate_body`]; `mask` selects the columns of the last
/// 16-column vector.
///
/// # Safety
/// As [`accumulate_body`], for `R` rows and the masked `16·V` columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate_block<const R: usize, const V: usize, const BF16: bool, const P_LD: usize>(
    acc: *mut f32,
    corr: *const f32,
    scale: bool,
    d: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    n: usize,
    mask: u16,
) {
    let m = |c: usize| if c + 1 == V { mask } else { 0xffff };
    // SAFETY: every access is inside the caller's rows and (masked) columns.
    unsafe {
        let mut a = [[_mm512_setzero_ps(); V]; R];
        for (r, a) in a.iter_mut().enumerate() {
            let f = _mm512_set1_ps(if scale { *corr.add(r) } else { 1.0 });
            for (c, a) in a.iter_mut().enumerate() {
                *a = _mm512_mul_ps(f, _mm512_maskz_loadu_ps(m(c), acc.add(r * d + 16 * c)));
            }
        }
        for w in 0..n {
            let mut vw = [_mm512_setzero_ps(); V];
            for (c, x) in vw.iter_mut().enumerate() {
                *x = _mm512_maskz_loadu_ps(m(c), v.add(w * v_ld + 16 * c));
            }
            for (r, a) in a.iter_mut().enumerate() {
                // P_LD is a constant: each broadcast is one pointer plus a displacement.
                let x = bcast(p.add(r * P_LD + w));
                for (a, &y) in a.iter_mut().zip(&vw) {
                    *a = madd::<BF16>(*a, x, y);
                }
            }
        }
        for (r, a) in a.iter().enumerate() {
            for (c, a) in a.iter().enumerate() {
                _mm512_mask_storeu_ps(acc.add(r * d + 16 * c), m(c), *a);
            }
        }
    }
}

/// The f32 score tile: [`scores_body`] with f32 FMAs (`a` = Q rows of `d`, `b` = a Kᵀ panel
/// of `d` rows). Head dims 64 and 128 get their row stride as a constant.
///
/// # Safety
/// As [`scores_body`]; the CPU has AVX-512F.
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scores_f32(
    q: *const f32,
    d: usize,
    rows: usize,
    kt: *const f32,
    kt_ld: usize,
    keys: usize,
    s: *mut f32,
    s_ld: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match d {
            64 => scores_body::<false, 64>(q, d, rows, d, kt, kt_ld, keys, s, s_ld),
            128 => scores_body::<false, 128>(q, d, rows, d, kt, kt_ld, keys, s, s_ld),
            _ => scores_body::<false, 0>(q, d, rows, d, kt, kt_ld, keys, s, s_ld),
        }
    }
}

/// The f32 `P V` step: [`accumulate_body`] with f32 FMAs over `keys` keys, P's rows
/// `P_LD` floats apart.
///
/// # Safety
/// As [`accumulate_body`] with `p_ld = P_LD`; the CPU has AVX-512F.
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn accumulate_f32<const P_LD: usize>(
    acc: *mut f32,
    corr: *const f32,
    d: usize,
    rows: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    keys: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { accumulate_body::<false, P_LD>(acc, corr, d, rows, p, v, v_ld, keys) }
}

/// The bf16 score tile: [`scores_body`] with `vdpbf16ps` over the `d/2` bf16 pairs of the Q
/// rows (`q_ld` pairs apart) and of a Kᵀ pair panel.
///
/// # Safety
/// As [`scores_body`] with `n = d/2` pair rows; the CPU has AVX-512F and AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bf16,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scores_bf16(
    q: *const u32,
    q_ld: usize,
    rows: usize,
    pairs: usize,
    kt: *const u32,
    kt_ld: usize,
    keys: usize,
    s: *mut f32,
    s_ld: usize,
) {
    // SAFETY: the caller's contract; bf16 pairs travel as 4-byte elements. Head dims 64
    // and 128 (32 and 64 pairs) get their row stride as a constant, as in `scores_f32`.
    unsafe {
        let (q, kt) = (q.cast(), kt.cast());
        match q_ld {
            32 => scores_body::<true, 32>(q, q_ld, rows, pairs, kt, kt_ld, keys, s, s_ld),
            64 => scores_body::<true, 64>(q, q_ld, rows, pairs, kt, kt_ld, keys, s, s_ld),
            _ => scores_body::<true, 0>(q, q_ld, rows, pairs, kt, kt_ld, keys, s, s_ld),
        }
    }
}

/// The bf16 `P V` step: [`accumulate_body`] with `vdpbf16ps` over `pairs` key pairs of P
/// (rounded to bf16, rows `P_LD` pairs apart) and of a V pair panel.
///
/// # Safety
/// As [`accumulate_body`] with `n = pairs`, `p_ld = P_LD`; the CPU has AVX-512F and
/// AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bf16,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn accumulate_bf16<const P_LD: usize>(
    acc: *mut f32,
    corr: *const f32,
    d: usize,
    rows: usize,
    p: *const u32,
    v: *const u32,
    v_ld: usize,
    pairs: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { accumulate_body::<true, P_LD>(acc, corr, d, rows, p.cast(), v.cast(), v_ld, pairs) }
}

/// The 16 16-bit elements (bf16 or f16 bits) at `p`, or the first `left < 16` of them and
/// zeros (AVX-512F only: the masked 16-bit loads are AVX512-BW).
///
/// # Safety
/// `min(left, 16)` of them at `p` are readable.
#[inline(always)]
unsafe fn load16_u16(p: *const u16, left: usize) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        if left >= 16 {
            _mm256_loadu_si256(p.cast())
        } else {
            let mut buf = [0u16; 16];
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), left);
            _mm256_loadu_si256(buf.as_ptr().cast())
        }
    }
}

/// The K and V element types of the direct (decode) kernels: f32, the bits of a bf16
/// (`u16`), or an f16 (`vcvtph2ps`), read 16 at a time as f32 lanes.
pub(super) trait Lanes: Copy {
    /// The 16 elements at `p` as f32, or the first `left < 16` of them and zeros.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `min(left, 16)` elements at `p` are readable.
    unsafe fn load16(p: *const Self, left: usize) -> __m512;

    /// The 16 elements at `p` as f32.
    ///
    /// # Safety
    /// The CPU has AVX-512F; 16 elements at `p` are readable.
    unsafe fn load16_full(p: *const Self) -> __m512;
}

impl Lanes for f32 {
    #[inline(always)]
    unsafe fn load16(p: *const f32, left: usize) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_maskz_loadu_ps(tail_mask(left), p) }
    }

    #[inline(always)]
    unsafe fn load16_full(p: *const f32) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_loadu_ps(p) }
    }
}

impl Lanes for u16 {
    #[inline(always)]
    unsafe fn load16(p: *const u16, left: usize) -> __m512 {
        // SAFETY: the caller's contract; a bf16 is the high half of its f32.
        unsafe { _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(load16_u16(p, left)))) }
    }

    #[inline(always)]
    unsafe fn load16_full(p: *const u16) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast())))) }
    }
}

impl Lanes for half::f16 {
    #[inline(always)]
    unsafe fn load16(p: *const half::f16, left: usize) -> __m512 {
        // SAFETY: the caller's contract; an f16 is 2 bytes, converted exactly.
        unsafe { _mm512_cvtph_ps(load16_u16(p.cast::<u16>(), left)) }
    }

    #[inline(always)]
    unsafe fn load16_full(p: *const half::f16) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(p.cast())) }
    }
}

/// The lanes `< left` of 16.
#[inline(always)]
fn tail_mask(left: usize) -> u16 {
    if left >= 16 {
        0xffff
    } else {
        ((1u32 << left) - 1) as u16
    }
}

/// `s[r·s_ld + j] = <q_r, k_j>` for the `rows ≤ 8` f32 rows `q_r` of `d` at `q` and the
/// `keys` rows `k_j` of `d` elements at `k(j)` (the decode loop's scores; bf16 rows
/// converted in registers). Rows go in groups of 4, 2 and 1, whose dot products run 16 at
/// a time (4, 8 or 16 keys; a last partial group repeats its last key) and are summed
/// across lanes together ([`sum16`]), so a score's bits depend on neither the key's place
/// in the group nor how the caller cuts the keys (paged keys give the bits of contiguous
/// ones).
///
/// # Safety
/// The CPU has AVX-512F; `q` holds `rows·d` floats, `k(j)` points at `d` readable elements
/// for `j < keys`, `s` has the `rows` rows of `keys` floats at stride `s_ld`.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn direct_scores<E: Lanes>(
    q: *const f32,
    rows: usize,
    d: usize,
    k: impl Fn(usize) -> *const E,
    keys: usize,
    s: *mut f32,
    s_ld: usize,
) {
    debug_assert!(rows <= 8);
    let mut r = 0;
    while r < rows {
        // SAFETY: rows r.. of q and s are inside the caller's bounds.
        let (q, s) = unsafe { (q.add(r * d), s.add(r * s_ld)) };
        // SAFETY: the caller's contract, for the group's rows.
        unsafe {
            r += match rows - r {
                4.. => scores_rows::<E, 4, 4>(q, d, &k, keys, s, s_ld),
                2 | 3 => scores_rows::<E, 2, 8>(q, d, &k, keys, s, s_ld),
                _ => scores_rows::<E, 1, 16>(q, d, &k, keys, s, s_ld),
            }
        };
    }
}

/// [`direct_scores`] for `R` rows, `KB` keys at a time (`R·KB = 16` accumulators); returns
/// `R`.
///
/// # Safety
/// As [`direct_scores`], for `R` rows.
#[inline(always)]
unsafe fn scores_rows<E: Lanes, const R: usize, const KB: usize>(
    q: *const f32,
    d: usize,
    k: &impl Fn(usize) -> *const E,
    keys: usize,
    s: *mut f32,
    s_ld: usize,
) -> usize {
    // SAFETY: every access is inside the caller's rows, keys and d columns.
    unsafe {
        let mut j = 0;
        while j < keys {
            let kp: [*const E; KB] = std::array::from_fn(|kk| k((j + kk).min(keys - 1)));
            // Accumulator `kk·R + r` sums row r against key j + kk.
            let mut acc = [_mm512_setzero_ps(); 16];
            let mut c = 0;
            while c + 16 <= d {
                let mut qv = [_mm512_setzero_ps(); R];
                for (r, x) in qv.iter_mut().enumerate() {
                    *x = _mm512_loadu_ps(q.add(r * d + c));
                }
                for (kk, &kr) in kp.iter().enumerate() {
                    let kv = E::load16_full(kr.add(c));
                    for (r, &x) in qv.iter().enumerate() {
                        acc[kk * R + r] = _mm512_fmadd_ps(x, kv, acc[kk * R + r]);
                    }
                }
                c += 16;
            }
            if c < d {
                for (kk, &kr) in kp.iter().enumerate() {
                    let kv = E::load16(kr.add(c), d - c);
                    for r in 0..R {
                        let x = f32::load16(q.add(r * d + c), d - c);
                        acc[kk * R + r] = _mm512_fmadd_ps(x, kv, acc[kk * R + r]);
                    }
                }
            }
            let sums: [f32; 16] = std::mem::transmute(sum16(&acc));
            for kk in 0..KB.min(keys - j) {
                for r in 0..R {
                    let n = kk * R + r;
                    *s.add(r * s_ld + j + kk) = sums[4 * (n % 4) + n / 4];
                }
            }
            j += KB;
        }
    }
    R
}

/// The lane sums of 16 vectors at once: lane `4·(n % 4) + n / 4` of the result is the
/// sum of the lanes of `a[n]` (three rounds of 128-, 64- and 32-bit shuffles and adds, 45
/// instructions for what 16 horizontal sums do in about 130).
#[inline(always)]
fn sum16(a: &[__m512; 16]) -> __m512 {
    // SAFETY: the callers have AVX-512F.
    unsafe {
        // x[i]: the 8 half sums of a[2i], then of a[2i + 1].
        let mut x = [_mm512_setzero_ps(); 8];
        for (i, x) in x.iter_mut().enumerate() {
            let (p, q) = (a[2 * i], a[2 * i + 1]);
            *x = _mm512_add_ps(_mm512_shuffle_f32x4::<0x44>(p, q), _mm512_shuffle_f32x4::<0xee>(p, q));
        }
        // y[i]: 128-bit lane L holds 4 partial sums of a[4i + L].
        let mut y = [_mm512_setzero_ps(); 4];
        for (i, y) in y.iter_mut().enumerate() {
            let (p, q) = (x[2 * i], x[2 * i + 1]);
            *y = _mm512_add_ps(_mm512_shuffle_f32x4::<0x88>(p, q), _mm512_shuffle_f32x4::<0xdd>(p, q));
        }
        // Within each 128-bit lane L: element e ends as the sum of y[e]'s lane L.
        let z0 = _mm512_add_ps(_mm512_unpacklo_ps(y[0], y[1]), _mm512_unpackhi_ps(y[0], y[1]));
        let z1 = _mm512_add_ps(_mm512_unpacklo_ps(y[2], y[3]), _mm512_unpackhi_ps(y[2], y[3]));
        let (z0, z1) = (_mm512_castps_pd(z0), _mm512_castps_pd(z1));
        _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(z0, z1)), _mm512_castpd_ps(_mm512_unpackhi_pd(z0, z1)))
    }
}

/// `acc[r·d + c] += Σ_{j < keys} p[r·p_ld + j] · v_j[c]` for the `rows ≤ 8` f32
/// accumulator rows of `d` and the `keys` rows `v_j` of `d` elements at `v + j·v_ld` (the
/// decode loop's `P V`; bf16 rows converted in registers): per 16 columns the rows'
/// accumulators stay in registers over all the keys.
///
/// # Safety
/// The CPU has AVX-512F; `acc` holds `rows·d` floats, `p` the `rows` rows of `keys` at
/// stride `p_ld`, `v` the `keys` rows.
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn direct_pv<E: Lanes>(
    acc: *mut f32,
    rows: usize,
    d: usize,
    p: *const f32,
    p_ld: usize,
    v: *const E,
    v_ld: usize,
    keys: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match rows {
            1 => pv_rows::<E, 1>(acc, d, p, p_ld, v, v_ld, keys),
            2 => pv_rows::<E, 2>(acc, d, p, p_ld, v, v_ld, keys),
            3 => pv_rows::<E, 3>(acc, d, p, p_ld, v, v_ld, keys),
            4 => pv_rows::<E, 4>(acc, d, p, p_ld, v, v_ld, keys),
            5 => pv_rows::<E, 5>(acc, d, p, p_ld, v, v_ld, keys),
            6 => pv_rows::<E, 6>(acc, d, p, p_ld, v, v_ld, keys),
            7 => pv_rows::<E, 7>(acc, d, p, p_ld, v, v_ld, keys),
            8 => pv_rows::<E, 8>(acc, d, p, p_ld, v, v_ld, keys),
            _ => unreachable!("direct_pv takes at most 8 rows"),
        }
    }
}

/// [`direct_pv`] for `R` rows.
///
/// # Safety
/// As [`direct_pv`].
#[inline(always)]
unsafe fn pv_rows<E: Lanes, const R: usize>(
    acc: *mut f32,
    d: usize,
    p: *const f32,
    p_ld: usize,
    v: *const E,
    v_ld: usize,
    keys: usize,
) {
    // SAFETY: every access is inside the caller's rows, keys and (masked) d columns.
    unsafe {
        // 32 columns at a time: 2·R independent accumulator chains over the keys.
        let mut c = 0;
        while c + 32 <= d {
            let mut a = [[_mm512_setzero_ps(); 2]; R];
            for (r, a) in a.iter_mut().enumerate() {
                a[0] = _mm512_loadu_ps(acc.add(r * d + c));
                a[1] = _mm512_loadu_ps(acc.add(r * d + c + 16));
            }
            for j in 0..keys {
                let v0 = E::load16_full(v.add(j * v_ld + c));
                let v1 = E::load16_full(v.add(j * v_ld + c + 16));
                for (r, a) in a.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*p.add(r * p_ld + j));
                    a[0] = _mm512_fmadd_ps(x, v0, a[0]);
                    a[1] = _mm512_fmadd_ps(x, v1, a[1]);
                }
            }
            for (r, a) in a.iter().enumerate() {
                _mm512_storeu_ps(acc.add(r * d + c), a[0]);
                _mm512_storeu_ps(acc.add(r * d + c + 16), a[1]);
            }
            c += 32;
        }
        while c < d {
            let m = tail_mask(d - c);
            let mut a = [_mm512_setzero_ps(); R];
            for (r, a) in a.iter_mut().enumerate() {
                *a = _mm512_maskz_loadu_ps(m, acc.add(r * d + c));
            }
            for j in 0..keys {
                let vv = E::load16(v.add(j * v_ld + c), d - c);
                for (r, a) in a.iter_mut().enumerate() {
                    *a = _mm512_fmadd_ps(_mm512_set1_ps(*p.add(r * p_ld + j)), vv, *a);
                }
            }
            for (r, a) in a.iter().enumerate() {
                _mm512_mask_storeu_ps(acc.add(r * d + c), m, *a);
            }
            c += 16;
        }
    }
}

/// The largest element of `x`, ignoring NaN; `-inf` for an empty or all-NaN slice (as
/// `super::softmax::row_max`).
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) fn row_max(x: &[f32]) -> f32 {
    // Four independent maxima over 64 elements at a time, so that a 256-score row is not
    // one chain of 16 dependent `vmaxps` (the max is exact, so the grouping changes
    // nothing).
    let mut quads = x.chunks_exact(64);
    let mut m4 = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
    for q in &mut quads {
        for (k, m) in m4.iter_mut().enumerate() {
            // SAFETY: `q` holds 64 floats.
            let v = unsafe { _mm512_loadu_ps(q.as_ptr().add(16 * k)) };
            *m = _mm512_max_ps(v, *m); // the second operand when either is NaN
        }
    }
    let mut m = _mm512_max_ps(_mm512_max_ps(m4[0], m4[1]), _mm512_max_ps(m4[2], m4[3]));
    let mut chunks = quads.remainder().chunks_exact(16);
    for c in &mut chunks {
        // SAFETY: `c` holds 16 floats.
        let v = unsafe { _mm512_loadu_ps(c.as_ptr()) };
        m = _mm512_max_ps(v, m);
    }
    let h = _mm512_reduce_max_ps(m); // the lanes hold no NaN
    chunks.remainder().iter().fold(h, |a, &v| if v > a { v } else { a })
}

/// `x *= c`, then the largest element as [`row_max`].
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) fn scale_row_max(x: &mut [f32], c: f32) -> f32 {
    let mut chunks = x.chunks_exact_mut(16);
    let (c16, mut m) = (_mm512_set1_ps(c), _mm512_set1_ps(f32::NEG_INFINITY));
    for ch in &mut chunks {
        // SAFETY: `ch` holds 16 floats.
        let v = _mm512_mul_ps(c16, unsafe { _mm512_loadu_ps(ch.as_ptr()) });
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(ch.as_mut_ptr(), v) };
        m = _mm512_max_ps(v, m);
    }
    let mut h = _mm512_reduce_max_ps(m);
    for v in chunks.into_remainder() {
        *v *= c;
        h = if *v > h { *v } else { h };
    }
    h
}

/// `x = 2^(x - m)` in place, returning the sum; `m` is at least every non-NaN element. The
/// operations of [`exp2_f32`] on 16 lanes, so the same results.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) fn exp2_sub_sum(x: &mut [f32], m: f32) -> f32 {
    let mut chunks = x.chunks_exact_mut(16);
    let m16 = _mm512_set1_ps(m);
    let mut sum = _mm512_setzero_ps();
    for c in &mut chunks {
        // SAFETY: `c` holds 16 floats.
        let e = exp2x16(_mm512_sub_ps(unsafe { _mm512_loadu_ps(c.as_ptr()) }, m16));
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(c.as_mut_ptr(), e) };
        sum = _mm512_add_ps(sum, e);
    }
    let mut tail = 0f32;
    for v in chunks.into_remainder() {
        *v = exp2_f32(*v - m);
        tail += *v;
    }
    tail + _mm512_reduce_add_ps(sum)
}

/// [`exp2_f32`] of 16 lanes.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn exp2x16(x: __m512) -> __m512 {
    // The second operand unless the first is larger: a NaN x stays NaN.
    let xc = _mm512_max_ps(_mm512_set1_ps(EXP2_MIN), x);
    let t = _mm512_add_ps(xc, _mm512_set1_ps(EXP2_ROUND));
    let f = _mm512_sub_ps(xc, _mm512_sub_ps(t, _mm512_set1_ps(EXP2_ROUND)));
    let mut poly = _mm512_set1_ps(EXP2_POLY[0]);
    for &c in &EXP2_POLY[1..] {
        poly = _mm512_fmadd_ps(poly, f, _mm512_set1_ps(c));
    }
    _mm512_mul_ps(poly, _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_castps_si512(t))))
}

/// `2^f` on [0, 1) to a relative 2.7e-6 (degree 4, fitted for relative error by
/// reweighted least squares; f32 Horner, 20k points against f64): for probabilities that
/// are rounded to bf16 (half an ulp is 2^-9 = 2e-3), where the degree-6 [`EXP2_POLY`]
/// spends two more FMAs on digits the rounding drops. The row sums use the same values,
/// off by at most 2.7e-6 relative, a thousandth of the output's own bf16 rounding.
const EXP2_POLY_BF16: [f32; 5] = [0.013_534_121, 0.052_011_482, 0.241_442_8, 0.693_003_83, 1.000_002_6];

/// `2^x` of 16 lanes with [`EXP2_POLY_BF16`], its range reduction in two instructions:
/// `f = x - ⌊x⌋` (`vreduceps`, AVX-512DQ), then `2^f · 2^⌊x⌋` (`vscalefps`, which takes
/// the floor of its exponent operand itself). `-inf` gives 0 (`vreduceps` of an infinity
/// is 0, then `2^-inf`); a very negative x a subnormal or 0, which the bf16 conversion
/// flushes to 0; NaN stays NaN. Against the clamp, round and subtract it replaces, 3 of
/// the pass's 12 vector instructions per 16 scores fewer.
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
fn exp2x16_bf16(x: __m512) -> __m512 {
    let f = _mm512_reduce_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(x);
    let mut poly = _mm512_set1_ps(EXP2_POLY_BF16[0]);
    for &c in &EXP2_POLY_BF16[1..] {
        poly = _mm512_fmadd_ps(poly, f, _mm512_set1_ps(c));
    }
    _mm512_scalef_ps(poly, x)
}

/// `dst[j] = bf16(2^(c·x[j] - m))` (one FMA for the argument, then [`exp2x16_bf16`]) for
/// `j < x.len()`, zeros from there to `dst.len()`; returns the sum of the unrounded
/// values. The bf16 paths' softmax pass on tiles without masks, softcap or ALiBi,
/// whose raw scores `x` take the scale `c > 0` here (`m` = the running max of `c·x`): one
/// pass that stores only the bf16 probabilities.
#[target_feature(enable = "avx512f,avx512dq,avx512bf16,avx2,fma")]
pub(super) fn exp2_scaled_to_bf16(x: &[f32], c: f32, m: f32, dst: &mut [u16]) -> f32 {
    let n = x.len();
    debug_assert!(dst.len() >= n);
    let (c16, m16) = (_mm512_set1_ps(c), _mm512_set1_ps(-m));
    let (mut sum, mut sum2) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut j = 0;
    // 32 at a time: one conversion (`vcvtne2ps2bf16`) and one 64-byte store per 32.
    while j + 32 <= n {
        // SAFETY: 32 floats at x[j..] and 32 bf16 at dst[j..] are in bounds.
        unsafe {
            let e0 = exp2x16_bf16(_mm512_fmadd_ps(_mm512_loadu_ps(x.as_ptr().add(j)), c16, m16));
            let e1 = exp2x16_bf16(_mm512_fmadd_ps(_mm512_loadu_ps(x.as_ptr().add(j + 16)), c16, m16));
            sum = _mm512_add_ps(sum, e0);
            sum2 = _mm512_add_ps(sum2, e1);
            let h = _mm512_cvtne2ps_pbh(e1, e0); // e0 in the low half
            _mm512_storeu_si512(dst.as_mut_ptr().add(j).cast(), std::mem::transmute::<__m512bh, __m512i>(h));
        }
        j += 32;
    }
    sum = _mm512_add_ps(sum, sum2);
    while j + 16 <= n {
        // SAFETY: 16 floats at x[j..] and 16 bf16 at dst[j..] are in bounds.
        unsafe {
            let e = exp2x16_bf16(_mm512_fmadd_ps(_mm512_loadu_ps(x.as_ptr().add(j)), c16, m16));
            sum = _mm512_add_ps(sum, e);
            let h = _mm512_cvtneps_pbh(e);
            _mm256_storeu_si256(dst.as_mut_ptr().add(j).cast(), std::mem::transmute::<__m256bh, __m256i>(h));
        }
        j += 16;
    }
    let mut tail = 0f32;
    for (d, &v) in dst[j..n].iter_mut().zip(&x[j..]) {
        let e = exp2_f32(v.mul_add(c, -m));
        tail += e;
        *d = half::bf16::from_f32(e).to_bits();
    }
    dst[n..].fill(0);
    tail + _mm512_reduce_add_ps(sum)
}

/// `dst[j] = bf16(src[j])` (round to nearest even) for `j < src.len()`, then zeros up to
/// `dst.len()`: the probabilities of one row for the bf16 `P V` products.
#[target_feature(enable = "avx512f,avx512bf16,avx2,fma")]
pub(super) fn round_row_bf16(src: &[f32], dst: &mut [u16]) {
    let n = src.len();
    debug_assert!(dst.len() >= n);
    let mut j = 0;
    while j + 16 <= n {
        // SAFETY: 16 floats at src[j..] and 16 bf16 at dst[j..] are in bounds.
        unsafe {
            let h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src.as_ptr().add(j)));
            _mm256_storeu_si256(dst.as_mut_ptr().add(j).cast(), std::mem::transmute::<__m256bh, __m256i>(h));
        }
        j += 16;
    }
    for (d, &s) in dst[j..n].iter_mut().zip(&src[j..]) {
        *d = half::bf16::from_f32(s).to_bits();
    }
    dst[n..].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(test: &str, features: &[&str]) -> bool {
        let missing: Vec<_> = features.iter().copied().filter(|f| !super::super::has_feature(f)).collect();
        if !missing.is_empty() {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: cpu::avx512::{test}: CPU lacks {}", missing.join(", "));
        }
        missing.is_empty()
    }

    #[test]
    fn exp2_pass_matches_exp2_f32_bit_for_bit() {
        if !has("exp2_pass_matches_exp2_f32_bit_for_bit", &["avx512f", "avx2", "fma"]) {
            return;
        }
        let mut x: Vec<f32> = (0..20_000).map(|i| -0.0071 * i as f32).collect();
        x.extend([f32::NEG_INFINITY, -127.5, -127.01, -126.99, -1e30, 0.0, -0.0, -1e-30, f32::NAN]);
        let mut got = x.clone();
        // SAFETY: the features were detected.
        assert!(unsafe { exp2_sub_sum(&mut got, 0.0) }.is_nan());
        for (g, &v) in got.iter().zip(&x) {
            let want = exp2_f32(v);
            assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "2^{v}: {g} vs {want}");
        }
        for n in [0, 1, 15, 16, 17, 63, 64, 65, 100, 256, 271] {
            let mut y: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            if n > 2 {
                y[n / 2] = f32::NAN;
            }
            let want = y.iter().filter(|v| !v.is_nan()).fold(f32::NEG_INFINITY, |a, &v| a.max(v));
            // SAFETY: as above.
            assert_eq!(unsafe { row_max(&y) }, want, "n = {n}");
            let want2 = y.iter().filter(|v| !v.is_nan()).fold(f32::NEG_INFINITY, |a, &v| a.max(0.5 * v));
            // SAFETY: as above.
            assert_eq!(unsafe { scale_row_max(&mut y, 0.5) }, want2, "n = {n}");
        }
    }

    /// The bf16 pass's `2^x` within 3e-6 of the exact value, 0 for -inf, NaN for NaN; its
    /// bf16 outputs within half a bf16 ulp (2^-8 relative; plus that) of the exact value.
    #[test]
    fn exp2_to_bf16_pass_is_accurate() {
        if !has("exp2_to_bf16_pass_is_accurate", &["avx512f", "avx512dq", "avx512bf16", "avx2", "fma"]) {
            return;
        }
        let mut x: Vec<f32> = (0..40_000).map(|i| -0.0031 * i as f32).collect();
        x.extend([f32::NEG_INFINITY, -127.5, -126.9, 0.0, f32::NAN, -3.3]);
        let mut dst = vec![1u16; x.len() + 20];
        for c in [1.0f32, 0.37] {
            // SAFETY: the features were detected.
            let sum = unsafe { exp2_scaled_to_bf16(&x, c, -0.0, &mut dst) };
            assert!(sum.is_nan());
            for (j, (&v, &d)) in x.iter().zip(&dst).enumerate() {
                let want = ((c * v) as f64).exp2();
                let got = half::bf16::from_bits(d).to_f64();
                if v.is_nan() {
                    assert!(got.is_nan());
                } else if c * v < -126.5 {
                    assert_eq!(got, 0.0, "{j}: 2^{v}");
                } else {
                    assert!((got - want).abs() <= (2f64.powi(-8) + 3e-6) * want, "{j}: 2^({c}·{v}): {got} vs {want}");
                }
            }
            assert!(dst[x.len()..].iter().all(|&d| d == 0));
            let finite: Vec<f32> = x.iter().copied().filter(|v| !v.is_nan()).collect();
            // SAFETY: as above.
            let sum = unsafe { exp2_scaled_to_bf16(&finite, c, 0.0, &mut dst) } as f64;
            let want: f64 = finite.iter().map(|&v| ((c * v) as f64).exp2()).sum();
            assert!((sum - want).abs() <= 1e-5 * want, "{sum} vs {want}");
        }
    }

    /// The kernels against plain f64 loops on odd sizes (partial row blocks, a masked
    /// last column block, 16- and 32-column blocks).
    #[test]
    fn products_match_f64_loops() {
        if !has("products_match_f64_loops", &["avx512f", "avx512bf16", "avx2", "fma"]) {
            return;
        }
        let val = |i: usize| (((i * 7919) % 113) as f32 - 56.0) / 37.0;
        let bf = |x: f32| half::bf16::from_f32(x);
        for (rows, n, cols) in [(1, 1, 16), (13, 37, 48), (48, 64, 256), (5, 40, 32), (25, 111, 16)] {
            let (b_ld, s_ld) = (cols + 16, cols + 16);
            let b: Vec<f32> = (0..n * b_ld).map(|i| val(i + 5)).collect();
            let mut s = vec![0f32; rows * s_ld];
            let a: Vec<f32> = (0..rows * n).map(val).collect();
            // SAFETY: the features were detected; the buffers hold the sizes the kernel reads.
            unsafe { scores_f32(a.as_ptr(), n, rows, b.as_ptr(), b_ld, cols, s.as_mut_ptr(), s_ld) };
            for r in 0..rows {
                for j in 0..cols {
                    let want: f64 = (0..n).map(|t| a[r * n + t] as f64 * b[t * b_ld + j] as f64).sum();
                    assert!((s[r * s_ld + j] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "{rows} {n} {cols}");
                }
            }
            // bf16 pairs: n pairs of (a, b) values.
            let ab: Vec<u32> = (0..rows * n)
                .map(|i| (bf(val(2 * i)).to_bits() as u32) | ((bf(val(2 * i + 1)).to_bits() as u32) << 16))
                .collect();
            let bb: Vec<u32> = (0..n * b_ld)
                .map(|i| (bf(val(2 * i + 3)).to_bits() as u32) | ((bf(val(2 * i + 4)).to_bits() as u32) << 16))
                .collect();
            let lo = |x: u32| half::bf16::from_bits(x as u16).to_f64();
            let hi = |x: u32| half::bf16::from_bits((x >> 16) as u16).to_f64();
            // SAFETY: as above.
            unsafe { scores_bf16(ab.as_ptr(), n, rows, n, bb.as_ptr(), b_ld, cols, s.as_mut_ptr(), s_ld) };
            for r in 0..rows {
                for j in 0..cols {
                    let want: f64 = (0..n)
                        .map(|t| {
                            let (x, y) = (ab[r * n + t], bb[t * b_ld + j]);
                            lo(x) * lo(y) + hi(x) * hi(y)
                        })
                        .sum();
                    assert!(
                        (s[r * s_ld + j] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()),
                        "bf16 {rows} {n} {cols}"
                    );
                }
            }
            // P V: rows × d (= cols) accumulators over n keys.
            let d = cols - 5;
            let corr: Vec<f32> = (0..rows).map(|r| 0.5 + r as f32 / 7.0).collect();
            let acc0: Vec<f32> = (0..rows * d).map(|i| val(i + 11)).collect();
            let mut acc = acc0.clone();
            // P = a, rows of n at stride P_LD.
            const P_LD: usize = 128;
            let mut pa = vec![f32::NAN; rows * P_LD];
            let mut pb = vec![0u32; rows * P_LD];
            for r in 0..rows {
                pa[r * P_LD..][..n].copy_from_slice(&a[r * n..][..n]);
                pb[r * P_LD..][..n].copy_from_slice(&ab[r * n..][..n]);
            }
            // SAFETY: as above (p = a, rows of n ≤ P_LD at stride P_LD; v = b, n rows at
            // b_ld ≥ d).
            unsafe {
                accumulate_f32::<P_LD>(acc.as_mut_ptr(), corr.as_ptr(), d, rows, pa.as_ptr(), b.as_ptr(), b_ld, n)
            };
            for r in 0..rows {
                for c in 0..d {
                    let want = corr[r] as f64 * acc0[r * d + c] as f64
                        + (0..n).map(|w| a[r * n + w] as f64 * b[w * b_ld + c] as f64).sum::<f64>();
                    assert!((acc[r * d + c] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "pv {rows} {n} {d}");
                }
            }
            let mut acc = acc0.clone();
            // SAFETY: as above.
            unsafe {
                accumulate_bf16::<P_LD>(acc.as_mut_ptr(), corr.as_ptr(), d, rows, pb.as_ptr(), bb.as_ptr(), b_ld, n)
            };
            for r in 0..rows {
                for c in 0..d {
                    let want = corr[r] as f64 * acc0[r * d + c] as f64
                        + (0..n)
                            .map(|w| {
                                let (x, y) = (ab[r * n + w], bb[w * b_ld + c]);
                                lo(x) * lo(y) + hi(x) * hi(y)
                            })
                            .sum::<f64>();
                    assert!((acc[r * d + c] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "pv bf16 {rows} {n} {d}");
                }
            }
        }
    }
}
