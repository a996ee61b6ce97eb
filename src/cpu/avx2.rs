//! AVX2 + FMA micro-kernels for the two tile products of a prefill item, replacing the
//! `gemm` calls where the CPU has those instructions and `head_dim % 8 == 0`.
//!
//! Both products keep a 6-row × 16-column block of the output in 12 ymm registers and
//! stream the shared operand (Kᵀ or V, laid out by `SharedKv`) in 16-float rows, one
//! broadcast of the per-row operand (Q or P) feeding two FMAs: 12 FMAs per 6 broadcasts and
//! 2 loads, so the two FMA pipes stay the bottleneck. Blocks are visited column block by
//! column block, so the 16-column slice of Kᵀ or V a block reads stays in L1 across the
//! row blocks. The `P V` kernel also applies the online softmax's rescale of the
//! accumulator as it loads it.
//!
//! The softmax's row max and `2^x` pass are here too, in intrinsics: LLVM's vectorization
//! of the portable loops kept reloading the `exp` constants (2 of the 16% the softmax took
//! single-thread at (1,4,4,2048,2048,64); perf, min of 30 runs).

use std::arch::x86_64::*;

use super::pack::S_LD;
use super::softmax::{exp2_f32, EXP2_MIN, EXP2_POLY, EXP2_ROUND};

/// Rows of one register block.
const MR: usize = 6;

/// `dst[t·dst_ld + jj] = rows[jj·src_ld + t]` for the 8 rows `jj < 8` and `t < d`: 8 keys
/// of K transposed into a Kᵀ block (`SharedKv::new`), 8 × 8 at a time in registers
/// (unpack, shuffle, lane permute: 24 shuffles per 64 floats, against 64 scalar
/// loads and stores), the last `d % 8` columns one by one.
///
/// # Safety
/// The CPU has AVX; `rows` holds 8 rows of `d` readable floats at stride `src_ld`; `dst`
/// has `d` rows of 8 writable floats at stride `dst_ld`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transpose8(rows: *const f32, src_ld: usize, d: usize, dst: *mut f32, dst_ld: usize) {
    let mut t = 0;
    while t + 8 <= d {
        // SAFETY: columns t..t + 8 of the 8 rows and rows t..t + 8 of dst are in bounds.
        unsafe {
            let r: [__m256; 8] = std::array::from_fn(|jj| _mm256_loadu_ps(rows.add(jj * src_ld + t)));
            let a0 = _mm256_unpacklo_ps(r[0], r[1]);
            let a1 = _mm256_unpackhi_ps(r[0], r[1]);
            let a2 = _mm256_unpacklo_ps(r[2], r[3]);
            let a3 = _mm256_unpackhi_ps(r[2], r[3]);
            let a4 = _mm256_unpacklo_ps(r[4], r[5]);
            let a5 = _mm256_unpackhi_ps(r[4], r[5]);
            let a6 = _mm256_unpacklo_ps(r[6], r[7]);
            let a7 = _mm256_unpackhi_ps(r[6], r[7]);
            let b0 = _mm256_shuffle_ps::<0x44>(a0, a2);
            let b1 = _mm256_shuffle_ps::<0xEE>(a0, a2);
            let b2 = _mm256_shuffle_ps::<0x44>(a1, a3);
            let b3 = _mm256_shuffle_ps::<0xEE>(a1, a3);
            let b4 = _mm256_shuffle_ps::<0x44>(a4, a6);
            let b5 = _mm256_shuffle_ps::<0xEE>(a4, a6);
            let b6 = _mm256_shuffle_ps::<0x44>(a5, a7);
            let b7 = _mm256_shuffle_ps::<0xEE>(a5, a7);
            let out = [
                _mm256_permute2f128_ps::<0x20>(b0, b4),
                _mm256_permute2f128_ps::<0x20>(b1, b5),
                _mm256_permute2f128_ps::<0x20>(b2, b6),
                _mm256_permute2f128_ps::<0x20>(b3, b7),
                _mm256_permute2f128_ps::<0x31>(b0, b4),
                _mm256_permute2f128_ps::<0x31>(b1, b5),
                _mm256_permute2f128_ps::<0x31>(b2, b6),
                _mm256_permute2f128_ps::<0x31>(b3, b7),
            ];
            for (k, o) in out.iter().enumerate() {
                _mm256_storeu_ps(dst.add((t + k) * dst_ld), *o);
            }
        }
        t += 8;
    }
    for t in t..d {
        for jj in 0..8 {
            // SAFETY: as above, for column t.
            unsafe { *dst.add(t * dst_ld + jj) = *rows.add(jj * src_ld + t) };
        }
    }
}

/// `s[r·S_LD + j] = Σ_t q[r·d + t] · kt[t·kt_ld + j]` for `r < rows`, `j < 16·⌈keys/16⌉`:
/// the score tile of `rows` query rows against `keys` keys of a Kᵀ panel. Columns past
/// `keys` (up to the next multiple of 16) get whatever the panel holds there.
///
/// # Safety
/// The CPU has AVX2 and FMA; `q` holds `rows·d` floats; `kt` points at `d` rows of
/// `16·⌈keys/16⌉` readable floats at stride `kt_ld`; `s` holds `rows` rows of
/// `16·⌈keys/16⌉ ≤ S_LD` floats at stride `S_LD`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn scores(q: &[f32], d: usize, rows: usize, kt: *const f32, kt_ld: usize, keys: usize, s: *mut f32) {
    debug_assert!(q.len() >= rows * d);
    let q = q.as_ptr();
    for j in (0..keys).step_by(16) {
        let mut r = 0;
        while r + MR <= rows {
            // SAFETY: rows r..r + MR and columns j..j + 16 are inside the caller's bounds.
            unsafe { scores_block::<MR>(q.add(r * d), d, kt.add(j), kt_ld, s.add(r * S_LD + j)) };
            r += MR;
        }
        // SAFETY: as above, for the last rows % MR rows.
        unsafe {
            let (q, s) = (q.add(r * d), s.add(r * S_LD + j));
            match rows - r {
                0 => {}
                1 => scores_block::<1>(q, d, kt.add(j), kt_ld, s),
                2 => scores_block::<2>(q, d, kt.add(j), kt_ld, s),
                3 => scores_block::<3>(q, d, kt.add(j), kt_ld, s),
                4 => scores_block::<4>(q, d, kt.add(j), kt_ld, s),
                _ => scores_block::<5>(q, d, kt.add(j), kt_ld, s),
            }
        }
    }
}

/// One `R × 16` block of [`scores`].
///
/// # Safety
/// As [`scores`], for `R` rows and 16 columns.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn scores_block<const R: usize>(q: *const f32, d: usize, kt: *const f32, kt_ld: usize, s: *mut f32) {
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for t in 0..d {
        // SAFETY: row t of the panel has 16 readable floats at kt; q rows hold d floats.
        unsafe {
            let k0 = _mm256_loadu_ps(kt.add(t * kt_ld));
            let k1 = _mm256_loadu_ps(kt.add(t * kt_ld + 8));
            for (r, a) in acc.iter_mut().enumerate() {
                let x = _mm256_broadcast_ss(&*q.add(r * d + t));
                a[0] = _mm256_fmadd_ps(x, k0, a[0]);
                a[1] = _mm256_fmadd_ps(x, k1, a[1]);
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        // SAFETY: row r of s has 16 writable floats at s + r·S_LD.
        unsafe {
            _mm256_storeu_ps(s.add(r * S_LD), a[0]);
            _mm256_storeu_ps(s.add(r * S_LD + 8), a[1]);
        }
    }
}

/// `acc[r·d + c] = corr[r]·acc[r·d + c] + Σ_{j < keys} p[r·S_LD + j] · v[j·v_ld + c]` for
/// `r < rows`, `c < d`: the online softmax's rescale folded into the accumulator loads.
///
/// # Safety
/// The CPU has AVX2 and FMA; `d % 8 == 0`; `acc` holds `rows·d` floats and `corr` `rows`;
/// `p` holds `rows` rows of `keys` floats at stride `S_LD`; `v` points at `keys` rows of
/// `d` readable floats at stride `v_ld`.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn accumulate(
    acc: &mut [f32],
    corr: &[f32],
    d: usize,
    rows: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    keys: usize,
) {
    debug_assert!(d.is_multiple_of(8) && acc.len() >= rows * d && corr.len() >= rows);
    let (acc, corr) = (acc.as_mut_ptr(), corr.as_ptr());
    for c in (0..d).step_by(16) {
        // SAFETY: columns c..c + 16 (or c..c + 8 at the end when d % 16 == 8) and the rows
        // below are inside the caller's bounds.
        unsafe {
            if c + 16 <= d {
                accumulate_cols::<2>(acc.add(c), corr, d, rows, p, v.add(c), v_ld, keys)
            } else {
                accumulate_cols::<1>(acc.add(c), corr, d, rows, p, v.add(c), v_ld, keys)
            }
        }
    }
}

/// The `8·V` columns at `acc`/`v` of [`accumulate`], for all rows.
///
/// # Safety
/// As [`accumulate`], for `8·V` columns.
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate_cols<const V: usize>(
    acc: *mut f32,
    corr: *const f32,
    d: usize,
    rows: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    keys: usize,
) {
    let mut r = 0;
    while r + MR <= rows {
        // SAFETY: rows r..r + MR are inside the caller's bounds.
        unsafe { accumulate_block::<MR, V>(acc.add(r * d), corr.add(r), d, p.add(r * S_LD), v, v_ld, keys) };
        r += MR;
    }
    // SAFETY: as above, for the last rows % MR rows.
    unsafe {
        let (acc, corr, p) = (acc.add(r * d), corr.add(r), p.add(r * S_LD));
        match rows - r {
            0 => {}
            1 => accumulate_block::<1, V>(acc, corr, d, p, v, v_ld, keys),
            2 => accumulate_block::<2, V>(acc, corr, d, p, v, v_ld, keys),
            3 => accumulate_block::<3, V>(acc, corr, d, p, v, v_ld, keys),
            4 => accumulate_block::<4, V>(acc, corr, d, p, v, v_ld, keys),
            _ => accumulate_block::<5, V>(acc, corr, d, p, v, v_ld, keys),
        }
    }
}

/// One `R × 8·V` block of [`accumulate`].
///
/// # Safety
/// As [`accumulate`], for `R` rows and `8·V` columns.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn accumulate_block<const R: usize, const V: usize>(
    acc: *mut f32,
    corr: *const f32,
    d: usize,
    p: *const f32,
    v: *const f32,
    v_ld: usize,
    keys: usize,
) {
    let mut a = [[_mm256_setzero_ps(); V]; R];
    // SAFETY: every access is inside the caller's rows and columns.
    unsafe {
        for (r, a) in a.iter_mut().enumerate() {
            let f = _mm256_broadcast_ss(&*corr.add(r));
            for (c, a) in a.iter_mut().enumerate() {
                *a = _mm256_mul_ps(f, _mm256_loadu_ps(acc.add(r * d + 8 * c)));
            }
        }
        for j in 0..keys {
            let mut vj = [_mm256_setzero_ps(); V];
            for (c, x) in vj.iter_mut().enumerate() {
                *x = _mm256_loadu_ps(v.add(j * v_ld + 8 * c));
            }
            for (r, a) in a.iter_mut().enumerate() {
                // A compile-time offset from p + j: S_LD is a constant.
                let x = _mm256_broadcast_ss(&*p.add(r * S_LD + j));
                for (a, &y) in a.iter_mut().zip(&vj) {
                    *a = _mm256_fmadd_ps(x, y, *a);
                }
            }
        }
        for (r, a) in a.iter().enumerate() {
            for (c, a) in a.iter().enumerate() {
                _mm256_storeu_ps(acc.add(r * d + 8 * c), *a);
            }
        }
    }
}

/// The largest element of `x`, ignoring NaN; `-inf` for an empty or all-NaN slice (as
/// `super::softmax::row_max`).
#[target_feature(enable = "avx2,fma")]
pub(super) fn row_max(x: &[f32]) -> f32 {
    let mut chunks = x.chunks_exact(8);
    let mut m = _mm256_set1_ps(f32::NEG_INFINITY);
    for c in &mut chunks {
        // SAFETY: `c` holds 8 floats.
        let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
        m = _mm256_max_ps(v, m); // the second operand when either is NaN
    }
    // A tree over the lanes, which hold no NaN.
    let h = _mm_max_ps(_mm256_extractf128_ps::<1>(m), _mm256_castps256_ps128(m));
    let h = _mm_max_ps(_mm_movehl_ps(h, h), h);
    let h = _mm_cvtss_f32(_mm_max_ss(_mm_movehdup_ps(h), h));
    chunks.remainder().iter().fold(h, |a, &v| if v > a { v } else { a })
}

/// `x = 2^(x - m)` in place, returning the sum; `m` is at least every non-NaN element, so
/// `x - m ≤ 0`. The operations of [`exp2_f32`] on 8 lanes, so the same results.
#[target_feature(enable = "avx2,fma")]
pub(super) fn exp2_sub_sum(x: &mut [f32], m: f32) -> f32 {
    let mut chunks = x.chunks_exact_mut(8);
    let m8 = _mm256_set1_ps(m);
    let mut sum = _mm256_setzero_ps();
    for c in &mut chunks {
        // SAFETY: `c` holds 8 floats.
        let e = exp2x8(_mm256_sub_ps(unsafe { _mm256_loadu_ps(c.as_ptr()) }, m8));
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(c.as_mut_ptr(), e) };
        sum = _mm256_add_ps(sum, e);
    }
    let mut tail = 0f32;
    for v in chunks.into_remainder() {
        *v = exp2_f32(*v - m);
        tail += *v;
    }
    tail + hsum(sum)
}

/// The sum of the 8 lanes, as a tree.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
}

/// [`exp2_f32`] of 8 lanes.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp2x8(x: __m256) -> __m256 {
    // The second operand unless the first is larger: a NaN x stays NaN.
    let xc = _mm256_max_ps(_mm256_set1_ps(EXP2_MIN), x);
    let t = _mm256_add_ps(xc, _mm256_set1_ps(EXP2_ROUND));
    let f = _mm256_sub_ps(xc, _mm256_sub_ps(t, _mm256_set1_ps(EXP2_ROUND)));
    let mut poly = _mm256_set1_ps(EXP2_POLY[0]);
    for &c in &EXP2_POLY[1..] {
        poly = _mm256_fmadd_ps(poly, f, _mm256_set1_ps(c));
    }
    _mm256_mul_ps(poly, _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_castps_si256(t))))
}

#[cfg(test)]
mod tests {

    #[test]
    fn transpose8_matches_scalar() {
        if !(super::super::has_feature("avx2") && super::super::has_feature("fma")) {
            return;
        }
        for d in [1usize, 7, 8, 13, 64, 100] {
            let (src_ld, dst_ld) = (d + 3, 11);
            let rows: Vec<f32> = (0..8 * src_ld).map(|i| i as f32).collect();
            let mut dst = vec![f32::NAN; d * dst_ld];
            // SAFETY: the features were detected; the buffers hold the sizes it reads and writes.
            unsafe { transpose8(rows.as_ptr(), src_ld, d, dst.as_mut_ptr(), dst_ld) };
            for t in 0..d {
                for jj in 0..8 {
                    assert_eq!(dst[t * dst_ld + jj], rows[jj * src_ld + t], "d {d} t {t} jj {jj}");
                }
            }
        }
    }
    use super::*;

    /// Whether the CPU runs these kernels; if not, says so on the process's stderr (past
    /// the test harness's capture), so that a skipped test never passes silently.
    fn has_avx2(test: &str) -> bool {
        let missing = super::super::CpuPath::Avx2Kernels.missing_features();
        if !missing.is_empty() {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: cpu::avx2::{test}: CPU lacks {}", missing.join(", "));
        }
        missing.is_empty()
    }

    #[test]
    fn exp2_pass_matches_exp2_f32_bit_for_bit() {
        if !has_avx2("exp2_pass_matches_exp2_f32_bit_for_bit") {
            return;
        }
        let mut x: Vec<f32> = (0..20_000).map(|i| -0.0071 * i as f32).collect();
        x.extend([f32::NEG_INFINITY, -127.5, -127.01, -126.99, -1e30, 0.0, -0.0, -1e-30, f32::NAN]);
        for m in [0.0f32, 3.5] {
            let input: Vec<f32> = x.iter().map(|v| v + m).collect();
            let mut got = input.clone();
            // SAFETY: AVX2 and FMA were detected.
            assert!(unsafe { exp2_sub_sum(&mut got, m) }.is_nan());
            for (g, &v) in got.iter().zip(&input) {
                let want = exp2_f32(v - m);
                assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "2^({v} - {m}): {g} vs {want}");
            }
            let mut finite = input[..input.len() - 1].to_vec();
            // SAFETY: as above.
            let sum = unsafe { exp2_sub_sum(&mut finite, m) } as f64;
            let want: f64 = input[..input.len() - 1].iter().map(|&v| exp2_f32(v - m) as f64).sum();
            assert!((sum - want).abs() <= 1e-5 * want, "{sum} vs {want}");
        }
    }

    #[test]
    fn row_max_ignores_nan() {
        if !has_avx2("row_max_ignores_nan") {
            return;
        }
        for n in [0, 1, 7, 8, 9, 31, 128] {
            let mut x: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            if n > 2 {
                x[n / 2] = f32::NAN;
                x[n - 1] = f32::NAN;
            }
            let want = x.iter().filter(|v| !v.is_nan()).fold(f32::NEG_INFINITY, |a, &v| a.max(v));
            // SAFETY: AVX2 and FMA were detected.
            assert_eq!(unsafe { row_max(&x) }, want, "n = {n}");
        }
        // SAFETY: as above.
        assert_eq!(unsafe { row_max(&[f32::NAN; 9]) }, f32::NEG_INFINITY);
    }
}
