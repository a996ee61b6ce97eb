//! The CPU path against the f64 oracle: the random sweep per dtype, plus targeted tests
//! for NaN confinement, fully masked rows, zero-sized dims, strided views, split-KV
//! decoding and independence from the rayon thread count.
//!
//! Every test that runs the fused op runs it on each CPU kernel path this machine supports
//! (`candle_fused_attn::cpu_paths`, forced through `with_cpu_path`), and prints which paths
//! it ran and which it skipped, with the features the CPU lacks: see [`on_every_path`].
//!
//! Run in release (the sweep draws 500 cases per dtype and path):
//! `cargo test --release --test cpu`.

mod common;

use std::io::Write;

use candle_core::{DType, Device, IndexOp, Result, Tensor};
use candle_fused_attn::{attention, attention_ref, cpu_paths, release_cpu_buffers, with_cpu_path, AttnParams, CpuPath};
use common::{check_case, measure_with, oracle, run_sweep, Alibi, Case, FloorInputs, InputLayout};

const SWEEP_CASES: usize = 500;

/// Writes one line to the process's stderr, past the test harness's capture of
/// `eprintln!`, so that the paths run and skipped show in every `cargo test` run.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Runs `check` once with the path the library picks by itself (`None`), then with every
/// CPU attention call forced onto each path this CPU supports, in turn; prints the paths
/// run, and `SKIPPED: …` with the missing features for the others.
fn on_every_path(test: &str, check: impl Fn(Option<CpuPath>) -> Result<()>) -> Result<()> {
    run_paths(test, true, check)
}

/// As [`on_every_path`] without the default run: for the sweeps, whose forced runs already
/// cover every kernel the default could pick.
fn on_each_forced_path(test: &str, check: impl Fn(CpuPath) -> Result<()>) -> Result<()> {
    run_paths(test, false, |path| check(path.expect("a forced path")))
}

fn run_paths(test: &str, with_default: bool, check: impl Fn(Option<CpuPath>) -> Result<()>) -> Result<()> {
    let mut ran = Vec::new();
    if with_default {
        let mut failed_on = FailedOn::new(test, "the default path".into());
        check(None)?;
        failed_on.passed = true;
        ran.push("default");
    }
    for path in CpuPath::ALL {
        let missing = path.missing_features();
        if !missing.is_empty() {
            report(&format!("SKIPPED: {test}: cpu path {path}: CPU lacks {}", missing.join(", ")));
            continue;
        }
        let mut failed_on = FailedOn::new(test, format!("cpu path {path}"));
        with_cpu_path(path, || check(Some(path)))??;
        failed_on.passed = true;
        ran.push(path.name());
    }
    assert!(ran.len() > usize::from(with_default), "{test}: no CPU path ran");
    report(&format!("{test}: ran cpu paths {}", ran.join(", ")));
    Ok(())
}

/// Names the test and the path when a check returns an error or panics there.
struct FailedOn<'a> {
    test: &'a str,
    on: String,
    passed: bool,
}

impl<'a> FailedOn<'a> {
    fn new(test: &'a str, on: String) -> Self {
        Self { test, on, passed: false }
    }
}

impl Drop for FailedOn<'_> {
    fn drop(&mut self) {
        if !self.passed {
            report(&format!("FAILED: {}: on {}", self.test, self.on));
        }
    }
}

fn sweep(test: &str, dtype: DType, seed: u64) -> Result<()> {
    on_each_forced_path(test, |path| {
        let st = run_sweep(&Device::Cpu, dtype, SWEEP_CASES, seed)?;
        assert_eq!(st.cases, SWEEP_CASES);
        assert_eq!(
            st.failures, 0,
            "{} of {} {dtype:?} cases failed on cpu path {path} (each printed above with its seed)",
            st.failures, st.cases
        );
        // The scale <= 0 draws (CUDA routes them to other kernel instances) are in.
        assert!(st.zero_scales > 0 && st.negative_scales > 0, "the sweep drew no zero or negative scale: {st:?}");
        Ok(())
    })
}

#[test]
fn sweep_f32() -> Result<()> {
    sweep("sweep_f32", DType::F32, 1)
}

#[test]
fn sweep_f16() -> Result<()> {
    sweep("sweep_f16", DType::F16, 2)
}

#[test]
fn sweep_bf16() -> Result<()> {
    sweep("sweep_bf16", DType::BF16, 3)
}

/// The tolerance is tight enough to catch a small bug: a fused result computed with a
/// softmax scale off by 2% must fail.
#[test]
fn tolerance_rejects_a_slightly_wrong_result() -> Result<()> {
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let case = Case::plain(7, (2, 4, 2, 33, 70, 64));
        let (q, k, v, p) = case.inputs(&Device::Cpu, dtype)?;
        let mut wrong = p.clone();
        wrong.softmax_scale *= 1.02;
        let fused = attention(&q, &k, &v, &wrong)?;
        let naive = attention_ref(&q, &k, &v, &p)?;
        let reference = oracle(&q, &k, &v, &p)?;
        let r = measure_with(
            dtype,
            &fused,
            &naive,
            &reference,
            &FloorInputs::new(&q, &k, &v, &reference, p.softmax_scale)?,
        )?;
        assert!(!r.passes(), "{dtype:?}: a 2% scale error passed: {r:?}");
    }
    Ok(())
}

fn cpu_f32(shape: (usize, usize, usize, usize), seed: u64) -> Result<Tensor> {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    let n = shape.0 * shape.1 * shape.2 * shape.3;
    Tensor::from_vec(common::randn(&mut rng, n), shape, &Device::Cpu)
}

/// Sets element `(b, s, h, 0)` of a contiguous `(b, s, h, d)` tensor to NaN.
fn with_nan(t: &Tensor, b: usize, s: usize, h: usize) -> Result<Tensor> {
    let (_, ts, th, td) = t.dims4()?;
    let mut data = t.flatten_all()?.to_vec1::<f32>()?;
    data[((b * ts + s) * th + h) * td] = f32::NAN;
    Tensor::from_vec(data, t.shape(), &Device::Cpu)
}

/// Checks, for every `(b, s, h)` row, that it contains a NaN exactly when `expect_nan` says.
fn assert_nan_rows(t: &Tensor, expect_nan: impl Fn(usize, usize, usize) -> bool, what: &str) -> Result<()> {
    let (_, s, h, d) = t.dims4()?;
    let data = t.flatten_all()?.to_vec1::<f32>()?;
    for (row, values) in data.chunks_exact(d).enumerate() {
        let (bi, si, hi) = (row / (s * h), (row / h) % s, row % h);
        let has_nan = values.iter().any(|x| x.is_nan());
        assert_eq!(has_nan, expect_nan(bi, si, hi), "row ({bi},{si},{hi}) {what}");
    }
    Ok(())
}

/// Max |a - b| over the rows where `keep` is true; both must be finite there.
fn max_diff_where(a: &Tensor, b: &Tensor, keep: impl Fn(usize, usize, usize) -> bool) -> Result<f32> {
    let (nb, ns, nh, _) = a.dims4()?;
    let mut worst = 0f32;
    for bi in 0..nb {
        for si in 0..ns {
            for hi in 0..nh {
                if !keep(bi, si, hi) {
                    continue;
                }
                let (x, y) = (a.i((bi, si, hi))?.to_vec1::<f32>()?, b.i((bi, si, hi))?.to_vec1::<f32>()?);
                for (x, y) in x.iter().zip(&y) {
                    assert!(x.is_finite(), "row ({bi},{si},{hi}) is not finite");
                    worst = worst.max((x - y).abs());
                }
            }
        }
    }
    Ok(worst)
}

/// NaN in one query row reaches exactly that row's output, also when other heads of its
/// GQA group share the work item.
#[test]
fn nan_in_a_query_row_stays_in_that_row() -> Result<()> {
    on_every_path("nan_in_a_query_row_stays_in_that_row", |_| {
        let (b, sq, sk, h, hkv, d) = (2, 37, 300, 4, 2, 40);
        let (q, k, v) = (cpu_f32((b, sq, h, d), 1)?, cpu_f32((b, sk, hkv, d), 2)?, cpu_f32((b, sk, hkv, d), 3)?);
        for p in [AttnParams::new(0.2), AttnParams::new(0.2).causal(true)] {
            let clean = attention(&q, &k, &v, &p)?;
            let out = attention(&with_nan(&q, 1, 5, 3)?, &k, &v, &p)?;
            assert_nan_rows(&out, |bi, si, hi| (bi, si, hi) == (1, 5, 3), "")?;
            let diff = max_diff_where(&out, &clean, |bi, si, hi| (bi, si, hi) != (1, 5, 3))?;
            assert!(diff <= 1e-6, "other rows moved by {diff}");
        }
        Ok(())
    })
}

/// NaN in one key reaches exactly the rows that see that key: with a causal mask and
/// sq = sk, rows `i ≥ j` of the q heads that read that kv head.
#[test]
fn nan_in_a_key_reaches_only_rows_that_see_it() -> Result<()> {
    on_every_path("nan_in_a_key_reaches_only_rows_that_see_it", |_| {
        let (b, s, h, hkv, d) = (1, 700, 4, 2, 64);
        let (q, k, v) = (cpu_f32((b, s, h, d), 4)?, cpu_f32((b, s, hkv, d), 5)?, cpu_f32((b, s, hkv, d), 6)?);
        let (j, kvh) = (300, 1);
        let k_nan = with_nan(&k, 0, j, kvh)?;
        let sees = |si: usize, hi: usize| hi / 2 == kvh && si >= j;
        for window_left in [None, Some(100)] {
            let p = AttnParams::new(0.125).causal(true).window(window_left, Some(0));
            let sees = |si: usize, hi: usize| sees(si, hi) && window_left.is_none_or(|l| si <= j + l);
            let clean = attention(&q, &k, &v, &p)?;
            let out = attention(&q, &k_nan, &v, &p)?;
            assert_nan_rows(&out, |_, si, hi| sees(si, hi), &format!("window_left {window_left:?}"))?;
            let diff = max_diff_where(&out, &clean, |_, si, hi| !sees(si, hi))?;
            assert!(diff <= 1e-6, "unaffected rows moved by {diff}");
        }
        Ok(())
    })
}

/// Rows that see no key output exact zeros; the others match the reference.
#[test]
fn fully_masked_rows_are_zero() -> Result<()> {
    on_every_path("fully_masked_rows_are_zero", |_| {
        // (sq, sk, causal, left, right): causal with sq > sk leaves the first sq - sk rows
        // empty; a (0, 0) window with sq > sk leaves those rows and none past the end.
        for (sq, sk, causal, left, right) in
            [(50, 20, true, None, None), (50, 20, false, Some(0), Some(0)), (30, 10, true, Some(2), Some(0))]
        {
            let (q, k, v) = (cpu_f32((2, sq, 3, 16), 7)?, cpu_f32((2, sk, 3, 16), 8)?, cpu_f32((2, sk, 3, 16), 9)?);
            let p = AttnParams::new(0.25).causal(causal).window(left, right);
            let out = attention(&q, &k, &v, &p)?;
            let reference = oracle(&q, &k, &v, &p)?.to_dtype(DType::F32)?;
            let mut empty_rows = 0;
            for i in 0..sq {
                let diag = i as i64 + sk as i64 - sq as i64;
                let lo = left.map_or(0, |l| diag - l as i64).max(0);
                let hi =
                    if causal { diag } else { right.map_or(sk as i64 - 1, |r| diag + r as i64) }.min(sk as i64 - 1);
                let row = out.i((.., i))?.flatten_all()?.to_vec1::<f32>()?;
                if hi < lo {
                    empty_rows += 1;
                    assert!(row.iter().all(|&x| x == 0.0), "row {i} should be zeros: {:?}", &row[..4]);
                } else {
                    assert!(row.iter().any(|&x| x != 0.0), "row {i} sees keys {lo}..={hi} but is zero");
                }
            }
            assert!(empty_rows > 0, "case ({sq}, {sk}) has no empty row; it tests nothing");
            let err = (out - reference)?.abs()?.max_all()?.to_scalar::<f32>()?;
            assert!(err < 1e-5, "max error {err}");
        }
        Ok(())
    })
}

/// Zero-sized dimensions whose result is well defined return it: an empty output, or zeros
/// when there are no keys.
#[test]
fn zero_sized_dims_that_are_well_defined() -> Result<()> {
    on_every_path("zero_sized_dims_that_are_well_defined", |_| {
        let z = |shape: (usize, usize, usize, usize)| Tensor::zeros(shape, DType::F32, &Device::Cpu);
        let p = AttnParams::new(0.5).causal(true);
        // (q, k/v) shapes: batch 0, sq 0, q heads 0, head dim 0.
        for (qs, ks) in [
            ((0, 4, 2, 8), (0, 5, 2, 8)),
            ((1, 0, 2, 8), (1, 5, 2, 8)),
            ((1, 4, 0, 8), (1, 5, 2, 8)),
            ((1, 4, 0, 8), (1, 5, 0, 8)),
            ((1, 4, 2, 0), (1, 5, 2, 0)),
        ] {
            let out = attention(&z(qs)?, &z(ks)?, &z(ks)?, &p)?;
            assert_eq!(out.dims4()?, qs);
            assert_eq!(out.elem_count(), 0);
        }
        // sk = 0: every row sees no key, so the output is zeros of q's shape.
        let q = cpu_f32((2, 3, 4, 8), 10)?;
        let out = attention(&q, &z((2, 0, 2, 8))?, &z((2, 0, 2, 8))?, &AttnParams::new(0.5))?;
        assert_eq!(out.dims4()?, (2, 3, 4, 8));
        assert_eq!(out.abs()?.max_all()?.to_scalar::<f32>()?, 0.0);
        Ok(())
    })
}

/// Views from `narrow`, `transpose` and `i` give the same result as contiguous copies.
#[test]
fn strided_views() -> Result<()> {
    on_every_path("strided_views", |_| {
        for dtype in [DType::F32, DType::BF16] {
            // Every layout for q, k and v at once, GQA, causal + window, softcap and ALiBi.
            let mut case = Case::plain(11, (2, 8, 2, 77, 130, 80));
            case.causal = true;
            case.window_left = Some(40);
            case.softcap = Some(20.0);
            case.alibi = Alibi::PerBatchHead;
            for layouts in [
                [InputLayout::HeadsMajor, InputLayout::Narrowed, InputLayout::HeadDimStrided],
                [InputLayout::Narrowed, InputLayout::HeadDimStrided, InputLayout::HeadsMajor],
                [InputLayout::HeadDimStrided, InputLayout::HeadsMajor, InputLayout::Narrowed],
            ] {
                case.layouts = layouts;
                let r = check_case(&Device::Cpu, dtype, &case)?;
                assert!(r.passes(), "{dtype:?} {layouts:?}: {r:?}");
                let (q, k, v, p) = case.inputs(&Device::Cpu, dtype)?;
                let strided = attention(&q, &k, &v, &p)?;
                let copied = attention(&q.contiguous()?, &k.contiguous()?, &v.contiguous()?, &p)?;
                let diff = (strided.to_dtype(DType::F32)? - copied.to_dtype(DType::F32)?)?
                    .abs()?
                    .max_all()?
                    .to_scalar::<f32>()?;
                assert!(diff <= 1e-5, "{dtype:?} {layouts:?}: strided and contiguous differ by {diff}");
            }
            // A view made with `i` (one batch of a larger tensor) and a seq narrow of the KV cache.
            let big_q = cpu_f32((3, 20, 4, 64), 12)?.to_dtype(dtype)?;
            let big_kv = cpu_f32((3, 200, 4, 64), 13)?.to_dtype(dtype)?;
            let q = big_q.i(1..2)?;
            let kv = big_kv.i((1..2, 30..150))?;
            let p = AttnParams::new(0.125).causal(true);
            let reference = oracle(&q, &kv, &kv, &p)?;
            let floor_inputs = FloorInputs::new(&q, &kv, &kv, &reference, p.softmax_scale)?;
            let r = measure_with(
                dtype,
                &attention(&q, &kv, &kv, &p)?,
                &attention_ref(&q, &kv, &kv, &p)?,
                &reference,
                &floor_inputs,
            )?;
            assert!(r.passes(), "{dtype:?} i/narrow views: {r:?}");
        }
        Ok(())
    })
}

/// Decode shapes with few batch×heads split the keys across threads (split-KV); the merge
/// must match the oracle, with every mask kind, in every dtype.
#[test]
fn split_kv_decode() -> Result<()> {
    on_every_path("split_kv_decode", |_| {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for (shape, causal, left, alibi) in [
                ((1, 8, 1, 1, 5000, 64), false, None, Alibi::None),
                ((1, 4, 4, 3, 9000, 128), true, None, Alibi::PerHead),
                ((2, 2, 1, 16, 3000, 256), true, Some(700), Alibi::None),
                ((1, 16, 2, 1, 4097, 40), false, Some(1000), Alibi::PerBatchHead),
            ] {
                let mut case = Case::plain(20, shape);
                case.causal = causal;
                case.window_left = left;
                case.alibi = alibi;
                let r = check_case(&Device::Cpu, dtype, &case)?;
                assert!(r.passes(), "{dtype:?} {case:?}: {r:?}");
            }
        }
        Ok(())
    })
}

/// The result does not depend on the number of rayon threads beyond rounding. Thread
/// counts change the split-KV count for decode shapes, hence the summation order; prefill
/// shapes run the same tiles in any order and must agree exactly.
#[test]
fn result_does_not_depend_on_thread_count() -> Result<()> {
    on_every_path("result_does_not_depend_on_thread_count", |path| {
        let run = |threads: usize, case: &Case| -> Result<Vec<f32>> {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool");
            let (q, k, v, p) = case.inputs(&Device::Cpu, DType::F32)?;
            // A forced path is per thread: force it again on the pool's thread.
            let out = match path {
                Some(path) => pool.install(|| with_cpu_path(path, || attention(&q, &k, &v, &p)))??,
                None => pool.install(|| attention(&q, &k, &v, &p))?,
            };
            out.flatten_all()?.to_vec1::<f32>()
        };
        let prefill = Case::plain(30, (2, 8, 4, 300, 300, 64));
        let decode = Case::plain(31, (1, 8, 1, 1, 8000, 128));
        for (case, tolerance) in [(&prefill, 0.0), (&decode, 1e-6)] {
            let one = run(1, case)?;
            for threads in [2, 3, 8] {
                let many = run(threads, case)?;
                let diff = one.iter().zip(&many).fold(0f32, |a, (x, y)| a.max((x - y).abs()));
                assert!(diff <= tolerance, "{threads} threads vs 1 differ by {diff} on {case:?}");
            }
        }
        Ok(())
    })
}

/// A larger prefill shape than the sweep draws, with the bench's head dim.
#[test]
fn long_prefill_matches_the_oracle() -> Result<()> {
    on_every_path("long_prefill_matches_the_oracle", |_| {
        for (causal, dtype) in [(false, DType::F32), (true, DType::BF16)] {
            let mut case = Case::plain(40, (1, 2, 1, 1500, 2100, 64));
            case.causal = causal;
            let r = check_case(&Device::Cpu, dtype, &case)?;
            assert!(r.passes(), "{dtype:?} causal {causal}: {r:?}");
        }
        Ok(())
    })
}

/// Forcing a path this CPU cannot run is an error naming the path and the missing
/// features, never a call into code the CPU lacks; `cpu_paths` lists exactly the others.
#[test]
fn a_path_the_cpu_lacks_is_an_error() -> Result<()> {
    let (q, k, v) = (cpu_f32((1, 4, 2, 16), 50)?, cpu_f32((1, 5, 2, 16), 51)?, cpu_f32((1, 5, 2, 16), 52)?);
    let mut lacking = 0;
    for path in CpuPath::ALL {
        let missing = path.missing_features();
        assert_eq!(missing.is_empty(), cpu_paths().contains(&path), "{path}");
        if missing.is_empty() {
            continue;
        }
        lacking += 1;
        let err = with_cpu_path(path, || attention(&q, &k, &v, &AttnParams::new(0.25))).unwrap_err().to_string();
        assert!(err.contains(path.name()) && missing.iter().all(|f| err.contains(f)), "{err}");
    }
    if lacking == 0 {
        report(
            "SKIPPED: a_path_the_cpu_lacks_is_an_error: this CPU runs every path \
             (the message itself is checked by the unit tests in src/cpu/mod.rs)",
        );
    }
    Ok(())
}

/// The K/V buffers kept between calls stay within the default bound, and freeing them
/// changes no result: every float of them is written before it is read.
#[test]
fn released_buffers_change_no_result() -> Result<()> {
    on_every_path("released_buffers_change_no_result", |_| {
        let case = Case::plain(60, (1, 4, 2, 200, 700, 64));
        let (q, k, v, p) = case.inputs(&Device::Cpu, DType::F32)?;
        let first = attention(&q, &k, &v, &p)?.flatten_all()?.to_vec1::<f32>()?;
        let freed = release_cpu_buffers();
        // Other tests run alongside and may hold or return buffers: only the bound is exact.
        let mib = std::env::var("FUSED_ATTN_CPU_KEEP_MIB").map_or(256, |s| s.trim().parse().expect("a MiB count"));
        assert!(freed <= mib << 20, "kept {freed} bytes, over the {mib} MiB bound");
        let again = attention(&q, &k, &v, &p)?.flatten_all()?.to_vec1::<f32>()?;
        assert!(first.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits()), "results moved");
        Ok(())
    })
}

/// A softcap far above the scores (c·tanh(s/c) ≈ s), in f32 on every path against the f64
/// reference: the CPU's tanh keeps its accuracy at small arguments, where `1 - e^(-2|x|)`
/// cancels. With that form alone a softcap of 1e6 put 1.2e-2 of error on the output (session
/// 40's panic hunt); the bound is 8× what the naive f32 path gets plus 1e-6.
#[test]
fn large_softcap_keeps_accuracy() -> Result<()> {
    let dev = Device::Cpu;
    let q = Tensor::randn(0f32, 1., (1, 33, 4, 64), &dev)?;
    let k = Tensor::randn(0f32, 1., (1, 47, 2, 64), &dev)?;
    let v = Tensor::randn(0f32, 1., (1, 47, 2, 64), &dev)?;
    let f64s = |t: &Tensor| t.to_dtype(DType::F64);
    let max_diff = |a: &Tensor, b: &Tensor| -> Result<f64> {
        (a.to_dtype(DType::F64)? - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f64>()
    };
    on_every_path("large_softcap_keeps_accuracy", |path| {
        for c in [30f32, 1e3, 1e6, 1e8] {
            let p = AttnParams::new(0.125).softcap(c);
            let want = attention_ref(&f64s(&q)?, &f64s(&k)?, &f64s(&v)?, &p)?;
            let naive = max_diff(&attention_ref(&q, &k, &v, &p)?, &want)?;
            let fused = max_diff(&attention(&q, &k, &v, &p)?, &want)?;
            report(&format!(
                "large_softcap_keeps_accuracy: {path:?} softcap {c:e}: fused {fused:.2e}, naive {naive:.2e}"
            ));
            assert!(fused <= 8.0 * naive + 1e-6, "{path:?} softcap {c:e}: fused error {fused:e}, naive {naive:e}");
        }
        Ok(())
    })
}

/// Softmax scales up to 1e30 on every CPU path and dtype against f64, by the sweeps' rule
/// (2 × the naive error in the same dtype + the derived floor of tests/common, whose score
/// term grows with the scale: at the largest scales it leaves NaN and rows of zeros to catch,
/// which is what the folded exponent produced there). A one-hot softmax at the largest
/// scales. The CUDA prefill needed the same fix (tests/gpu.rs `gpu_large_scale`).
#[test]
fn large_scale_keeps_accuracy() -> Result<()> {
    let dev = Device::Cpu;
    let f64s = |t: &Tensor| t.to_dtype(DType::F64);
    on_every_path("large_scale_keeps_accuracy", |path| {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let q = Tensor::randn(0f32, 1., (1, 37, 4, 64), &dev)?.to_dtype(dtype)?;
            let k = Tensor::randn(0f32, 1., (1, 45, 2, 64), &dev)?.to_dtype(dtype)?;
            let v = Tensor::randn(0f32, 1., (1, 45, 2, 64), &dev)?.to_dtype(dtype)?;
            for scale in [1e3f32, 1e7, 1e9, 1e20, 1e30] {
                for causal in [false, true] {
                    let p = AttnParams::new(scale).causal(causal);
                    let want = attention_ref(&f64s(&q)?, &f64s(&k)?, &f64s(&v)?, &p)?;
                    let w = want.flatten_all()?.to_vec1::<f64>()?;
                    let err = |got: &Tensor| -> Result<f64> {
                        let g = got.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
                        Ok(g.iter()
                            .zip(&w)
                            .map(|(a, b)| if (a - b).is_nan() { f64::INFINITY } else { (a - b).abs() })
                            .fold(0.0, f64::max))
                    };
                    let out = attention(&q, &k, &v, &p)?;
                    let (fused, naive) = (err(&out)?, err(&attention_ref(&q, &k, &v, &p)?)?);
                    let allowed = 2.0 * naive + common::floor(dtype, &FloorInputs::new(&q, &k, &v, &want, scale)?);
                    let zero_rows = out
                        .to_dtype(DType::F64)?
                        .flatten_all()?
                        .to_vec1::<f64>()?
                        .chunks(64)
                        .filter(|r| r.iter().all(|x| *x == 0.0))
                        .count();
                    assert!(
                        fused <= allowed && zero_rows == 0,
                        "{path:?} {dtype:?} scale {scale:e} causal {causal}: fused error {fused:e} (NaN as inf), naive {naive:e}, allowed {allowed:e}, {zero_rows} zero rows"
                    );
                }
            }
        }
        Ok(())
    })
}
