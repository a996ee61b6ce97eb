//! The softmax's element-wise passes over one row of a score tile, in f32, portable: row
//! max, `2^(x - m)` with its sum, softcap and ALiBi, and the `2^x` they share.

use std::f32::consts::LOG2_E;

/// SIMD width the reductions below keep as independent lanes (16 f32 = one AVX-512
/// register, two AVX2 registers), so that LLVM vectorizes them without reassociating.
pub(super) const LANES: usize = 16;

/// The largest element, ignoring NaN; `-inf` for an empty or all-NaN slice.
#[inline(always)]
pub(super) fn row_max(x: &[f32]) -> f32 {
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
pub(super) fn exp2_sub_in_place(x: &mut [f32], m: f32) -> f32 {
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

/// `x = c·tanh(x)` ([`tanh_f32`]).
#[inline(always)]
pub(super) fn softcap_in_place(x: &mut [f32], c: f32) {
    for v in x.iter_mut() {
        *v = c * tanh_f32(*v);
    }
}

/// `tanh(x)` in f32 without branches or calls, so loops over it vectorize:
/// `sign(x)·(1 - e) / (1 + e)` with `e = 2^y`, `y = -2·log2(e)·|x|`, as [`exp2_f32`] computes it
/// (`2^n · (1 + f·q(f))`), with `1 - e` taken as `(1 - 2^n) - f·q·2^n`: exactly `-f·q` where
/// `n = 0` (|y| < 1/2), without the cancellation of `1 - e` for small |x|. With `1 - e` alone
/// a softcap of 1e6 put 1e-2 of error on the output (session 40's panic hunt), since the
/// score's absolute error was `c·ulp(1)` whatever its size; an odd polynomial below 0.625
/// cost the bf16 softcap path 10%, a select between the two forms 5%. ±1 for large |x|, never
/// NaN for finite or infinite x. Within 4 ulp of the f64 tanh (the test below).
#[inline(always)]
pub(super) fn tanh_f32(x: f32) -> f32 {
    let y = -2.0 * LOG2_E * x.abs();
    let yc = if y < EXP2_MIN { EXP2_MIN } else { y };
    let t = yc + EXP2_ROUND;
    let f = yc - (t - EXP2_ROUND);
    // exp2_f32's polynomial without its last step: 2^f = 1 + f·q, so e = p + fq·p with p = 2^n.
    let q = EXP2_POLY[1..6].iter().fold(EXP2_POLY[0], |acc, &c| acc.mul_add(f, c));
    let pow = f32::from_bits(t.to_bits() << 23);
    let fq = f * q;
    // 1 - e = (1 - p) - fq·p: exactly -fq where p = 1, well conditioned elsewhere (1 - p ≥ 1/2
    // and |fq·p| ≤ p/2); 1 + e likewise.
    let one_minus_e = (-fq).mul_add(pow, 1.0 - pow);
    let one_plus_e = fq.mul_add(pow, 1.0 + pow);
    (one_minus_e / one_plus_e).copysign(x)
}

/// `x[jj] -= slope·|dist0 - jj|`, where `dist0 = diag(i) - j0`.
#[inline(always)]
pub(super) fn add_alibi(x: &mut [f32], slope: f32, dist0: f32) {
    for (jj, v) in x.iter_mut().enumerate() {
        *v -= slope * (dist0 - jj as f32).abs();
    }
}

/// `2^x = 2^n · 2^f` with `n = round(x)` and `f = x - n` in [-1/2, 1/2] (exact), and `2^f`
/// the degree-6 polynomial of Cephes `exp2f`, in Horner form.
pub(super) const EXP2_POLY: [f32; 7] =
    [1.535_336_2e-4, 1.339_887_4e-3, 9.618_438e-3, 5.550_332_5e-2, 2.402_264_8e-1, 6.931_472e-1, 1.0];
/// `1.5·2^23 + 127`: adding it to x rounds x to the integer n held in the low mantissa
/// bits, biased by 127, so that shifting those bits into the exponent field gives `2^n`.
pub(super) const EXP2_ROUND: f32 = 12_583_039.0;
/// Inputs are clamped here: `2^-127` comes out as exactly 0 (the biased exponent is 0).
pub(super) const EXP2_MIN: f32 = -127.0;

/// `2^x` in f32 without branches or calls, so loops over it vectorize, for x ≤ 128 or NaN
/// (the callers pass differences from a running max and `-2·log2(e)·|x|`, all ≤ 0).
/// Within 0.64 ulp of the exact value over [-126, 0] (f64 reference, 1.7 million points);
/// exactly 0 below -127 and for -inf, exactly 1 at 0; NaN stays NaN. 12 vector operations
/// on AVX2 where the base-e Cephes `expf` took 17 (its range reduction by n·ln 2 needs two
/// FMAs and the polynomial two more steps).
#[inline(always)]
pub(super) fn exp2_f32(x: f32) -> f32 {
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

    /// The softcap's tanh: within 4 ulp (relative) of the f64 value from 1e-30 to 20, on
    /// both forms and across their boundary; odd; ±1, 0 and NaN where they belong.
    #[test]
    fn tanh_f32_is_within_four_ulp() {
        let mut worst = 0f64;
        let mut check = |x: f32| {
            let (got, want) = (tanh_f32(x) as f64, (x as f64).tanh());
            let err = ((got - want) / want).abs();
            assert!(err < 4.0 * f32::EPSILON as f64, "tanh({x:e}) = {got:e}, want {want:e} (relative error {err:e})");
            assert_eq!(tanh_f32(-x), -tanh_f32(x), "tanh is odd at {x:e}");
            worst = worst.max(err);
        };
        for i in 0..2_000_000 {
            check(i as f32 * 1e-5 + 1e-7);
        }
        for e in -300..=13 {
            let x = 10f64.powf(e as f64 / 10.0) as f32;
            check(x);
            check(x * 1.37);
        }
        eprintln!("tanh_f32: worst relative error {worst:e} ({:.2} ulp of 1)", worst / f32::EPSILON as f64);
        assert_eq!(tanh_f32(0.0), 0.0);
        assert_eq!(tanh_f32(50.0), 1.0);
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(f32::MAX), 1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}
