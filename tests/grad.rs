//! Gradients of the fused op on the CPU: every public function is differentiable, and dq,
//! dk, dv match the f64 oracle (candle autograd through `attention_ref` in f64) on random
//! cases of every feature, with the tolerance relative to the naive path in the same dtype
//! (`common::grad`). The oracle itself is checked against finite differences.
//!
//! `cargo test --release --test grad`

mod common;

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_fused_attn::{
    attention, attention_ref, attention_with_lse, flash_attn, flash_attn_alibi, flash_attn_alibi_windowed,
    flash_attn_alibi_windowed_softcap, flash_attn_windowed, AttnParams,
};
use common::grad::run_grad_sweep;

const GRAD_CASES: usize = 200;

fn sweep(dtype: DType, seed: u64) -> Result<()> {
    let failures = run_grad_sweep(&Device::Cpu, dtype, GRAD_CASES, seed)?;
    assert_eq!(failures, 0, "{failures} of {GRAD_CASES} {dtype:?} gradient cases failed (printed above)");
    Ok(())
}

/// A sweep's failing gradient case again on the CPU, with its worst elements printed:
/// `FUSED_ATTN_GRAD_CASE=<case seed> [FUSED_ATTN_GRAD_DTYPE=f16] cargo test --release --test
/// grad grad_case -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: FUSED_ATTN_GRAD_CASE=<case seed> reruns one gradient case"]
fn grad_case() -> Result<()> {
    let (case, dtype) = common::grad::grad_case_from_env().expect("FUSED_ATTN_GRAD_CASE=<case seed>");
    for explicit in [false, true] {
        common::grad::print_grad_case(&case, &Device::Cpu, dtype, explicit, 6)?;
    }
    Ok(())
}

#[test]
fn grad_sweep_f32() -> Result<()> {
    sweep(DType::F32, 11)
}

#[test]
fn grad_sweep_f16() -> Result<()> {
    sweep(DType::F16, 12)
}

#[test]
fn grad_sweep_bf16() -> Result<()> {
    sweep(DType::BF16, 13)
}

/// q, k, v as variables, and the gradients of `Σ f(q, k, v)²` with respect to each.
fn grads_through(f: impl Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>, dtype: DType) -> Result<[Option<Tensor>; 3]> {
    let dev = Device::Cpu;
    let make = |s: (usize, usize, usize, usize)| -> Result<Var> {
        Var::from_tensor(&Tensor::randn(0f32, 1., s, &dev)?.to_dtype(dtype)?)
    };
    let (q, k, v) = (make((2, 7, 4, 16))?, make((2, 9, 2, 16))?, make((2, 9, 2, 16))?);
    let out = f(q.as_tensor(), k.as_tensor(), v.as_tensor())?;
    let grads = out.to_dtype(DType::F32)?.sqr()?.sum_all()?.backward()?;
    Ok([q.as_tensor(), k.as_tensor(), v.as_tensor()].map(|t| grads.get(t).cloned()))
}

/// Fails when any public function drops a gradient (the op used to be applied without a
/// backward, so every gradient before it was silently `None`).
#[test]
fn every_public_function_gives_gradients() -> Result<()> {
    let slopes = Tensor::new(&[0.5f32, 0.25, 0.125, 0.0625], &Device::Cpu)?;
    let s = 0.25;
    type F<'a> = Box<dyn Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor> + 'a>;
    let fns: Vec<(&str, F)> = vec![
        ("attention", Box::new(|q, k, v| attention(q, k, v, &AttnParams::new(s).causal(true)))),
        ("attention_with_lse", Box::new(|q, k, v| Ok(attention_with_lse(q, k, v, &AttnParams::new(s))?.0))),
        ("flash_attn", Box::new(|q, k, v| flash_attn(q, k, v, s, true))),
        ("flash_attn_windowed", Box::new(|q, k, v| flash_attn_windowed(q, k, v, s, Some(3), Some(1)))),
        ("flash_attn_alibi", Box::new(|q, k, v| flash_attn_alibi(q, k, v, &slopes, s, false))),
        (
            "flash_attn_alibi_windowed",
            Box::new(|q, k, v| flash_attn_alibi_windowed(q, k, v, &slopes, s, Some(4), None)),
        ),
        (
            "flash_attn_alibi_windowed_softcap",
            Box::new(|q, k, v| flash_attn_alibi_windowed_softcap(q, k, v, Some(&slopes), s, None, Some(0), 5.0)),
        ),
    ];
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for (name, f) in &fns {
            let grads = grads_through(f, dtype)?;
            for (g, which) in grads.iter().zip(["q", "k", "v"]) {
                let g = g.as_ref().unwrap_or_else(|| panic!("{name} {dtype:?}: no gradient for {which}"));
                let norm = g.to_dtype(DType::F32)?.sqr()?.sum_all()?.to_scalar::<f32>()?;
                assert!(norm.is_finite() && norm > 0.0, "{name} {dtype:?}: gradient of {which} has norm² {norm}");
            }
        }
    }
    Ok(())
}

/// The naive training baseline must be differentiable: `attention_ref` on tracked inputs
/// gives gradients for q, k and v (it switches to candle-nn's differentiable softmax).
#[test]
fn naive_reference_gives_gradients() -> Result<()> {
    let grads = grads_through(|q, k, v| attention_ref(q, k, v, &AttnParams::new(0.3).causal(true)), DType::F32)?;
    for (g, which) in grads.iter().zip(["q", "k", "v"]) {
        assert!(g.is_some(), "attention_ref gave no gradient for {which}");
    }
    Ok(())
}

/// The f64 oracle's gradients against central finite differences of its own forward, on a
/// few small cases with every feature.
#[test]
fn oracle_matches_finite_differences() -> Result<()> {
    let dev = Device::Cpu;
    let slopes = Tensor::new(&[0.3f64 as f32, 0.7], &dev)?;
    let params = [
        AttnParams::new(0.4).causal(true),
        AttnParams::new(-0.3).window(Some(2), Some(1)).softcap(2.0),
        AttnParams::new(0.5).alibi_slopes(&slopes).window(None, Some(0)),
    ];
    for (ci, p) in params.iter().enumerate() {
        let q = Var::from_tensor(&Tensor::randn(0f64, 1., (1, 5, 2, 3), &dev)?)?;
        let k = Var::from_tensor(&Tensor::randn(0f64, 1., (1, 6, 1, 3), &dev)?)?;
        let v = Var::from_tensor(&Tensor::randn(0f64, 1., (1, 6, 1, 3), &dev)?)?;
        let w = Tensor::randn(0f64, 1., (1, 5, 2, 3), &dev)?;
        let loss = |q: &Tensor, k: &Tensor, v: &Tensor| -> Result<f64> {
            (attention_ref(q, k, v, p)? * &w)?.sum_all()?.to_scalar::<f64>()
        };
        let out = attention_ref(q.as_tensor(), k.as_tensor(), v.as_tensor(), p)?;
        let grads = (out * &w)?.sum_all()?.backward()?;
        let h = 1e-6;
        for (which, var) in [("q", &q), ("k", &k), ("v", &v)] {
            let g = grads.get(var.as_tensor()).expect("oracle gradient").flatten_all()?.to_vec1::<f64>()?;
            let base = var.as_tensor().flatten_all()?.to_vec1::<f64>()?;
            for idx in 0..base.len() {
                let at = |delta: f64| -> Result<f64> {
                    let mut x = base.clone();
                    x[idx] += delta;
                    let x = Tensor::from_vec(x, var.as_tensor().shape(), &dev)?;
                    let (qq, kk, vv) = match which {
                        "q" => (x, k.as_tensor().clone(), v.as_tensor().clone()),
                        "k" => (q.as_tensor().clone(), x, v.as_tensor().clone()),
                        _ => (q.as_tensor().clone(), k.as_tensor().clone(), x),
                    };
                    loss(&qq, &kk, &vv)
                };
                let fd = (at(h)? - at(-h)?) / (2.0 * h);
                assert!(
                    (fd - g[idx]).abs() <= 1e-6 * (1.0 + fd.abs()),
                    "case {ci}: d{which}[{idx}] autograd {} vs finite difference {fd}",
                    g[idx]
                );
            }
        }
    }
    Ok(())
}

/// `attention_with_lse` returns `attention`'s output bit for bit and an LSE that matches the
/// f64 oracle, on random cases of every feature and dtype.
#[test]
fn lse_matches_the_oracle() -> Result<()> {
    let limits = common::Limits::cpu();
    let mut failures = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for i in 0..100 {
            let case = common::Case::random(common::case_seed(21, i), &limits);
            let (err, allowed) = common::grad::check_lse_case(&case, &Device::Cpu, dtype)?;
            if err > allowed {
                failures += 1;
                println!("FAIL lse {dtype:?}: error {err:.3e} > allowed {allowed:.3e}: {case:?}");
            }
        }
    }
    assert_eq!(failures, 0, "{failures} LSE cases failed (printed above)");
    Ok(())
}

/// `attention_backward` is the backward autograd runs: the same gradients, bit for bit, and
/// its argument checks name the problem.
#[test]
fn attention_backward_equals_autograd() -> Result<()> {
    let dev = Device::Cpu;
    let slopes = Tensor::new(&[0.5f32, 0.25, 0.125, 0.0625], &dev)?;
    let p = AttnParams::new(0.3).window(Some(5), Some(0)).softcap(7.0).alibi_slopes(&slopes);
    for dtype in [DType::F32, DType::BF16] {
        let mk = |s: (usize, usize, usize, usize)| Tensor::randn(0f32, 1., s, &dev)?.to_dtype(dtype);
        let (q, k, v) =
            (Var::from_tensor(&mk((2, 7, 4, 24))?)?, Var::from_tensor(&mk((2, 11, 2, 24))?)?, mk((2, 11, 2, 24))?);
        let v = Var::from_tensor(&v)?;
        let g = mk((2, 7, 4, 24))?;
        let out = attention(q.as_tensor(), k.as_tensor(), v.as_tensor(), &p)?;
        let grads = (out.to_dtype(DType::F32)? * g.to_dtype(DType::F32)?)?.sum_all()?.backward()?;
        let [qd, kd, vd] = [&q, &k, &v].map(|x| x.as_tensor().detach());
        let (out2, lse) = attention_with_lse(&qd, &kd, &vd, &p)?;
        let (dq, dk, dv) = candle_fused_attn::attention_backward(&qd, &kd, &vd, &out2, &g, &lse, &p)?;
        for (mine, var) in [(&dq, &q), (&dk, &k), (&dv, &v)] {
            let auto = grads.get(var.as_tensor()).expect("autograd gradient");
            let diff =
                (mine.to_dtype(DType::F64)? - auto.to_dtype(DType::F64)?)?.abs()?.max_all()?.to_scalar::<f64>()?;
            assert_eq!(diff, 0.0, "{dtype:?}: attention_backward differs from autograd by {diff}");
        }
        let err = candle_fused_attn::attention_backward(&qd, &kd, &vd, &out2, &g, &lse.narrow(2, 0, 3)?, &p);
        assert!(err.unwrap_err().to_string().contains("lse must be f32 of shape [2, 4, 7]"));
    }
    Ok(())
}

/// Session 39's GPU sweep drew this case (f32, d = 512, `|scale|` 0.74, eight q heads on
/// one kv head, one query, ALiBi): its softmax is nearly one-hot, where the naive softmax's
/// own normalization hides its score errors and the fused backward's `exp(s − lse)` does
/// not. The fused dv erred by 1.2e-4 on both the CPU and CUDA, the naive one by 6.5e-6, and
/// the floor then had no term for the backward's recomputed scores (`grad_floor`). Kept as a
/// fixed case so that the floor's score term stays derived for it.
#[test]
fn grad_peaked_f32_d512() -> Result<()> {
    use common::{Alibi, Case, InputLayout};
    let case = Case {
        seed: 6075392477033118970,
        batch: 1,
        seq_q: 1,
        seq_k: 30,
        heads: 8,
        kv_heads: 1,
        head_dim: 512,
        softmax_scale: -0.73599255,
        causal: false,
        window_left: None,
        window_right: None,
        softcap: None,
        alibi: Alibi::PerBatchHead,
        layouts: [InputLayout::HeadsMajor, InputLayout::Contiguous, InputLayout::HeadsMajor],
    };
    for r in common::grad::check_grad_case_with(&case, &Device::Cpu, DType::F32, true)? {
        println!(
            "{}: fused {:.3e} allowed {:.3e} (naive {:.3e}, floor {:.3e})",
            r.name,
            r.fused_max_abs,
            r.allowed(),
            r.naive_max_abs,
            r.floor
        );
        assert!(r.passes(), "{}: {:.3e} above {:.3e}", r.name, r.fused_max_abs, r.allowed());
    }
    Ok(())
}
