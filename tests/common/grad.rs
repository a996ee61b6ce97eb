//! Gradient checks shared by the CPU and GPU test binaries.
//!
//! [`check_grad_case`] makes q, k and v trainable (`Var`s laid out as the [`Case`] says, so
//! the op sees the same strided views as in the forward sweeps), runs the fused op, takes
//! `loss = Σ out ∘ G` for a random upstream gradient `G`, and compares `dq`, `dk`, `dv`
//! against two others computed through candle's autograd on [`attention_ref`]:
//! * the **oracle**: f64 on the CPU, from the same (upcast) input values;
//! * the **naive** path: the same dtype on the same device.
//!
//! A gradient passes when `max|fused − oracle| ≤ 2·max|naive − oracle| + floor` and it is
//! finite wherever the oracle is ([`grad_floor`] derives the floor). A gradient that is
//! missing (`None` from the backward) is an error, never a pass.

use candle_core::{backprop::GradStore, DType, Device, Result, Tensor, Var};
use candle_fused_attn::{
    attention, attention_backward, attention_ref, attention_ref_lse, attention_ref_probs, attention_with_lse,
    AttnParams,
};
use rand::{rngs::StdRng, SeedableRng};

use super::{dtype_epsilon, randn, to_f64_vec, Case, InputLayout};

/// One trainable input: the variable that owns the memory and the `(b, s, h, d)` view of it
/// that the op receives.
struct Trainable {
    var: Var,
    view: Tensor,
    layout: InputLayout,
    dims: (usize, usize, usize, usize),
}

impl Trainable {
    /// A variable holding `t`'s values, viewed through `layout` (as `random_input` lays out
    /// its tensors), so that the op reads a strided view and the gradient flows back to it.
    fn new(t: &Tensor, layout: InputLayout) -> Result<Self> {
        let (b, s, h, d) = t.dims4()?;
        let t = t.contiguous()?;
        let (var, view) = match layout {
            InputLayout::Contiguous => {
                let var = Var::from_tensor(&t)?;
                let view = var.as_tensor().clone();
                (var, view)
            }
            InputLayout::HeadsMajor => {
                let var = Var::from_tensor(&t.transpose(1, 2)?.contiguous()?)?;
                let view = var.as_tensor().transpose(1, 2)?;
                (var, view)
            }
            InputLayout::HeadDimStrided => {
                let var = Var::from_tensor(&t.transpose(2, 3)?.contiguous()?)?;
                let view = var.as_tensor().transpose(2, 3)?;
                (var, view)
            }
            InputLayout::Narrowed => {
                let padded = Tensor::zeros((b, s + 3, h + 1, d + 5), t.dtype(), t.device())?;
                let padded = padded.slice_assign(&[0..b, 2..2 + s, 1..1 + h, 3..3 + d], &t)?;
                let var = Var::from_tensor(&padded)?;
                let view = var.as_tensor().narrow(1, 2, s)?.narrow(2, 1, h)?.narrow(3, 3, d)?;
                (var, view)
            }
        };
        Ok(Self { var, view, layout, dims: (b, s, h, d) })
    }

    /// The gradient of the view, `(b, s, h, d)`. A missing one is an error when `required`;
    /// otherwise zeros: candle's autograd prunes a branch that a zero factor cuts off (an
    /// `affine` by 0, as `attention_ref` does for scale 0), where the gradient is zero.
    fn grad(&self, grads: &GradStore, what: &str, required: bool) -> Result<Tensor> {
        let g = match grads.get(self.var.as_tensor()) {
            Some(g) => g.clone(),
            None if required => candle_core::bail!("no gradient for {what}: the backward dropped it"),
            None => self.var.as_tensor().zeros_like()?,
        };
        let g = &g;
        let (b, s, h, d) = self.dims;
        match self.layout {
            InputLayout::Contiguous => Ok(g.clone()),
            InputLayout::HeadsMajor => g.transpose(1, 2)?.contiguous(),
            InputLayout::HeadDimStrided => g.transpose(2, 3)?.contiguous(),
            InputLayout::Narrowed => g.narrow(1, 2, s)?.narrow(2, 1, h)?.narrow(3, 3, d)?.contiguous(),
        }
        .inspect(|g| debug_assert_eq!(g.dims(), &[b, s, h, d]))
    }
}

/// `dq`, `dk`, `dv` of `loss = Σ attention(q, k, v) ∘ upstream` through `f`.
/// The fused op's gradients are `required`; the references' may be pruned (see
/// [`Trainable::grad`]).
fn grads_of(
    q: &Trainable,
    k: &Trainable,
    v: &Trainable,
    upstream: &Tensor,
    required: bool,
    f: impl Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
) -> Result<[Tensor; 3]> {
    let out = f(&q.view, &k.view, &v.view)?;
    let loss = (out.to_dtype(upstream.dtype())? * upstream)?.sum_all()?;
    let grads = loss.backward()?;
    Ok([q.grad(&grads, "q", required)?, k.grad(&grads, "k", required)?, v.grad(&grads, "v", required)?])
}

/// The errors of one gradient against the oracle.
#[derive(Debug, Clone)]
pub struct GradResult {
    pub name: &'static str,
    pub fused_max_abs: f64,
    pub naive_max_abs: f64,
    pub floor: f64,
    /// ‖fused − oracle‖₂ / ‖oracle‖₂.
    pub fused_rel_l2: f64,
    /// Elements where the oracle is finite and the fused gradient is not.
    pub poisoned: usize,
}

impl GradResult {
    pub fn allowed(&self) -> f64 {
        2.0 * self.naive_max_abs + self.floor
    }
    pub fn passes(&self) -> bool {
        self.poisoned == 0 && self.fused_max_abs <= self.allowed()
    }
}

/// The forward's output and LSE on `dev` for the backward: `attention_with_lse` there, or,
/// where the CUDA forward has no instance for the head dim (d > 256 before the forward's
/// large instances), the CPU forward in the same dtype, moved to `dev`.
pub fn forward_with_lse(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<(Tensor, Tensor)> {
    match attention_with_lse(q, k, v, params) {
        Err(e) if q.device().is_cuda() && e.to_string().contains("kernel instance") => {
            let cpu = |t: &Tensor| t.to_device(&Device::Cpu);
            let (o, l) = attention_with_lse(&cpu(q)?, &cpu(k)?, &cpu(v)?, &params_on_cpu(params)?)?;
            Ok((o.to_device(q.device())?, l.to_device(q.device())?))
        }
        r => r,
    }
}

/// Runs one case's backward on `dev` in `dtype` and measures dq, dk, dv.
pub fn check_grad_case(case: &Case, dev: &Device, dtype: DType) -> Result<Vec<GradResult>> {
    check_grad_case_with(case, dev, dtype, false)
}

/// [`check_grad_case`]; with `explicit`, the fused gradients come from `attention_backward`
/// on [`forward_with_lse`]'s output instead of autograd through `attention` (so that the
/// backward is checked at head dims the CUDA forward does not run yet).
pub fn check_grad_case_with(case: &Case, dev: &Device, dtype: DType, explicit: bool) -> Result<Vec<GradResult>> {
    let run = grad_run(case, dev, dtype, explicit)?;
    grad_results(&run)
}

/// One case's gradients: fused (on `dev`, in `dtype`), naive (the same) and the f64 oracle,
/// each `[dq, dk, dv]`, and the floor of each.
pub struct GradRun {
    pub fused: [Tensor; 3],
    pub naive: [Tensor; 3],
    pub oracle: [Tensor; 3],
    pub floors: [f64; 3],
}

/// Runs one case's fused and naive backward on `dev` in `dtype` and the f64 oracle; with
/// `explicit`, as [`check_grad_case_with`].
pub fn grad_run(case: &Case, dev: &Device, dtype: DType, explicit: bool) -> Result<GradRun> {
    let (q, k, v, params) = case.inputs(dev, dtype)?;
    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed_9bad);
    let (b, sq, h, d) = q.dims4()?;
    // The upstream gradient in `dtype`, as q, k and v: the op's output is in `dtype`, so both
    // backward paths receive its gradient rounded to `dtype`, and the oracle takes the same
    // values. (Drawn in f32 and given to the oracle unrounded, it moved the oracle away from
    // both paths by that rounding, a shared error that the naive path's own errors could
    // cancel where the fused path's added to it: session 45's CUDA bf16 sweep failed a case
    // at d = 1, four heads on one kv head, fused dv 6.496e-3 against 6.330e-3 allowed, naive
    // 2.431e-3; 2.8e-3 of the fused error was the upstream's rounding, and a CPU model of the
    // kernel's arithmetic (P rounded to bf16 before Pᵀ dO) reproduced 6.495e-3.)
    let upstream = Tensor::from_vec(randn(&mut rng, b * sq * h * d), (b, sq, h, d), &Device::Cpu)?
        .to_dtype(dtype)?
        .to_dtype(DType::F32)?;

    let fused_in = [
        Trainable::new(&q, case.layouts[0])?,
        Trainable::new(&k, case.layouts[1])?,
        Trainable::new(&v, case.layouts[2])?,
    ];
    let up_dev = upstream.to_device(dev)?;
    let fused = if explicit {
        let [q, k, v] = [&fused_in[0].view, &fused_in[1].view, &fused_in[2].view];
        let (out, lse) = forward_with_lse(q, k, v, &params)?;
        let (dq, dk, dv) = attention_backward(q, k, v, &out, &up_dev.to_dtype(dtype)?, &lse, &params)?;
        [dq, dk, dv]
    } else {
        grads_of(&fused_in[0], &fused_in[1], &fused_in[2], &up_dev, true, |q, k, v| attention(q, k, v, &params))?
    };
    let naive =
        grads_of(&fused_in[0], &fused_in[1], &fused_in[2], &up_dev, false, |q, k, v| attention_ref(q, k, v, &params))?;

    // The oracle: the same values in f64 on the CPU.
    let cpu_params = params_on_cpu(&params)?;
    let up64 = upstream.to_dtype(DType::F64)?;
    let [q64, k64, v64] = [&q, &k, &v].map(|t| t.to_device(&Device::Cpu).and_then(|t| t.to_dtype(DType::F64)));
    let (q64, k64, v64) = (q64?, k64?, v64?);
    let oracle_in = [
        Trainable::new(&q64, InputLayout::Contiguous)?,
        Trainable::new(&k64, InputLayout::Contiguous)?,
        Trainable::new(&v64, InputLayout::Contiguous)?,
    ];
    let oracle = grads_of(&oracle_in[0], &oracle_in[1], &oracle_in[2], &up64, false, |q, k, v| {
        attention_ref(q, k, v, &cpu_params)
    })?;

    let floors = grad_floor(dtype, &q64, &k64, &v64, &up64, &cpu_params, &oracle)?;
    Ok(GradRun { fused, naive, oracle, floors })
}

/// dq, dk and dv of `run` measured against the oracle.
pub fn grad_results(run: &GradRun) -> Result<Vec<GradResult>> {
    let mut results = Vec::new();
    for (i, name) in ["dq", "dk", "dv"].into_iter().enumerate() {
        let o = to_f64_vec(&run.oracle[i])?;
        let f = to_f64_vec(&run.fused[i])?;
        let n = to_f64_vec(&run.naive[i])?;
        let max_err =
            |x: &[f64]| x.iter().zip(&o).filter(|(_, o)| o.is_finite()).fold(0f64, |a, (x, o)| a.max((x - o).abs()));
        let poisoned = f.iter().zip(&o).filter(|(x, o)| o.is_finite() && !x.is_finite()).count();
        let norm = o.iter().filter(|x| x.is_finite()).map(|x| x * x).sum::<f64>().sqrt();
        let diff = f.iter().zip(&o).filter(|(_, o)| o.is_finite()).map(|(x, o)| (x - o) * (x - o)).sum::<f64>().sqrt();
        results.push(GradResult {
            name,
            fused_max_abs: max_err(&f),
            naive_max_abs: max_err(&n),
            floor: run.floors[i],
            fused_rel_l2: if norm > 0.0 { diff / norm } else { diff },
            poisoned,
        });
    }
    Ok(results)
}

pub fn params_on_cpu(p: &AttnParams) -> Result<AttnParams> {
    let mut c = p.clone();
    c.alibi_slopes = p.alibi_slopes.as_ref().map(|s| s.to_device(&Device::Cpu)).transpose()?;
    Ok(c)
}

/// Prints one case's gradients against the oracle: per gradient its results and the `top`
/// elements of largest fused error (flat index, oracle, fused, naive). A tool for a failing
/// case of a sweep (`grad_case` tests, `FUSED_ATTN_GRAD_CASE`), not a check.
pub fn print_grad_case(case: &Case, dev: &Device, dtype: DType, explicit: bool, top: usize) -> Result<()> {
    let run = grad_run(case, dev, dtype, explicit)?;
    println!("{case:?} {dtype:?} on {dev:?} (explicit backward: {explicit})");
    for (i, r) in grad_results(&run)?.iter().enumerate() {
        println!(
            "  {}: fused {:.3e} allowed {:.3e} (naive {:.3e}, floor {:.3e}) passes {}",
            r.name,
            r.fused_max_abs,
            r.allowed(),
            r.naive_max_abs,
            r.floor,
            r.passes()
        );
        let [o, f, n] = [&run.oracle[i], &run.fused[i], &run.naive[i]].map(to_f64_vec);
        let (o, f, n) = (o?, f?, n?);
        let mut at: Vec<usize> = (0..o.len()).filter(|&j| o[j].is_finite()).collect();
        at.sort_by(|&a, &b| (f[b] - o[b]).abs().total_cmp(&(f[a] - o[a]).abs()));
        for &j in at.iter().take(top) {
            println!(
                "    [{j}] oracle {:+.6e} fused {:+.6e} ({:+.2e}) naive {:+.6e} ({:+.2e})",
                o[j],
                f[j],
                f[j] - o[j],
                n[j],
                n[j] - o[j]
            );
        }
    }
    Ok(())
}

/// The case named by `FUSED_ATTN_GRAD_CASE` (a case seed, as a sweep's failure prints it) in
/// the dtype of `FUSED_ATTN_GRAD_DTYPE` (f32, f16, bf16; default bf16), drawn with the
/// gradient sweeps' limits; `None` when unset.
pub fn grad_case_from_env() -> Option<(Case, DType)> {
    let seed = std::env::var("FUSED_ATTN_GRAD_CASE").ok()?.trim().parse::<u64>().ok()?;
    let dtype = match std::env::var("FUSED_ATTN_GRAD_DTYPE").as_deref().map(str::trim) {
        Ok("f32") => DType::F32,
        Ok("f16") => DType::F16,
        _ => DType::BF16,
    };
    Some((Case::random(seed, &grad_limits()), dtype))
}

/// The absolute error floor added to 2 × the naive error, per gradient, derived rather than
/// tuned. It covers what the naive path can escape by luck (for example `dq = 0` exactly
/// when each row sees one key, where the fused path computes `dP − D` as a difference of two
/// f32 dot products):
/// * **the final rounding to `dtype`**: `eps(dtype)/2 · max|g|`;
/// * **f32 accumulation order.** Each gradient element is a sum of `n` products; in the
///   probabilistic rounding model (λ = 1) a reordered f32 sum errs by `sqrt(n)·u·Σ|terms|`,
///   `u = eps(f32)/2`. The terms are bounded from the f64 probabilities `P`:
///   `dv_j = Σ_i P_ij dO_i` → `Σ_i P_ij · max|dO|`; `dS_ij = P_ij (dP_ij − D_i)` with
///   `dP = dO Vᵀ`, `D_i = <dO_i, O_i>` → `A_ij = P_ij (|dP_ij| + |D_i|)`, so
///   `dq_i` → `|scale| Σ_j A_ij · max|k|` and `dk_j` → `|scale| Σ_i A_ij · max|q|`. `dP`
///   and `D` are themselves d-term sums, so `n = max(terms, d)`, doubled for the two levels.
/// * **the stored LSE.** The backward recomputes `P = exp(s − lse)` from a score and an LSE
///   each rounded to f32 (and converted to base 2 and back), where the naive softmax
///   subtracts the row max, one of the scores, exactly. The exponent is then off by a few
///   units in the last place of `|s|` and `|lse|`: `P` by a relative
///   `4·u·(max|s| + max|lse|)` (over visible keys), which scales every bound above.
///
/// * **D from the stored output.** FlashAttention-2's `D_i = <dO_i, O_i>` reads the output as
///   the forward stored it, rounded to `dtype`, where the naive softmax backward uses its own
///   f32 probabilities: `|δD_i| ≤ eps(dtype)/2 · Σ_t |dO_it||O_it|`, which moves `dq` by
///   `|scale|·max|δD|·max|k|` and `dk_j` by `|scale|·Σ_i P_ij|δD_i|·max|q|` (bf16 at d = 1
///   showed it: the CPU and CUDA backwards both exceeded the floor without it).
///
/// * **the scores, computed twice.** The backward recomputes each score as a d-term f32 dot
///   product and subtracts the forward's LSE, itself a function of the forward's own f32
///   scores of the same pairs, summed in another order (the forward's kernels and the
///   backward's cut the dot products differently, and the CPU forward folds the scale into
///   Q first). `exp(s_bwd − lse_fwd)` therefore carries the difference of two roundings of
///   each score: a relative error of `2·sqrt(d)·u·|scale|·Σ_c |q_c||k_c|` in `P` (the
///   probabilistic model above, over the visible pairs), which also scales every bound.
///   The naive path does not see this: its softmax normalizes the probabilities it
///   computed, so a score error there moves a dominant `P ≈ 1` by almost nothing (seen in
///   session 39: f32, d = 512, `|scale|` 0.74, eight heads on one kv head, one query; the
///   fused dv erred by 1.2e-4 on both the CPU and CUDA, naive by 6.5e-6 and 1.8e-6, and the
///   floor without this term was 1.04e-4).
pub fn grad_floor(
    dtype: DType,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    upstream: &Tensor,
    params: &AttnParams,
    oracle: &[Tensor; 3],
) -> Result<[f64; 3]> {
    let (b, sq, h, d) = q.dims4()?;
    let (_, sk, hkv, _) = k.dims4()?;
    if b * sq * h * d * sk == 0 {
        return Ok([0.0; 3]);
    }
    let g = h / hkv;
    let u = f32::EPSILON as f64 / 2.0;
    let max_abs = |t: &Tensor| -> Result<f64> { Ok(to_f64_vec(t)?.iter().fold(0f64, |a, x| a.max(x.abs()))) };
    let scale = params.softmax_scale.abs() as f64;
    let probs = attention_ref_probs(q, k, v, params)?; // (b, h, sq, sk) f64
    let out = attention_ref(q, k, v, params)?; // (b, sq, h, d)
    let rep = |t: &Tensor| -> Result<Tensor> {
        // (b, sk, hkv, d) -> (b, h, sk, d)
        let t = t.transpose(1, 2)?;
        t.unsqueeze(2)?.broadcast_as((b, hkv, g, sk, d))?.contiguous()?.reshape((b, h, sk, d))
    };
    let d_o = upstream.transpose(1, 2)?.contiguous()?; // (b, h, sq, d)
    let dp = d_o.matmul(&rep(v)?.t()?)?.abs()?; // (b, h, sq, sk)
    let out_t = out.transpose(1, 2)?.contiguous()?; // (b, h, sq, d)
    let dsum = (&d_o * &out_t)?.sum_keepdim(3)?.abs()?; // (b, h, sq, 1)
    let a = (&probs * dp.broadcast_add(&dsum)?)?;
    // max|s| over visible keys, from s = ln P + lse where P > 0.
    let lse = attention_ref_lse(q, k, v, params)?; // (b, h, sq) f64
    let finite_max = |t: &Tensor| -> Result<f64> {
        Ok(to_f64_vec(t)?.iter().filter(|x| x.is_finite()).fold(0f64, |a, x| a.max(x.abs())))
    };
    let max_s = finite_max(&probs.log()?.broadcast_add(&lse.unsqueeze(3)?)?)?;
    // max over visible pairs of |scale|·Σ_c |q_c||k_c| (the dot products' sums of |terms|).
    let abs_dots = q.abs()?.transpose(1, 2)?.contiguous()?.matmul(&rep(&k.abs()?)?.t()?)?; // (b, h, sq, sk)
    let visible = probs.gt(0.0)?.to_dtype(abs_dots.dtype())?;
    let max_abs_dot = scale * max_abs(&(abs_dots * visible)?)?;
    let score_rel = 2.0 * (d as f64).sqrt() * u * max_abs_dot;
    let exp_rel = 4.0 * u * (max_s + finite_max(&lse)?) + score_rel;
    let level = |terms: usize| 2.0 * ((terms.max(d)) as f64).sqrt() * u + exp_rel;
    // dk and dv sum over the q rows of every head of the kv head's group.
    let group_sum = |t: &Tensor| t.reshape((b, hkv, g, sk))?.sum(2);
    let b_dv = max_abs(&group_sum(&probs.sum(2)?)?)? * max_abs(upstream)?;
    let b_dq = scale * max_abs(&a.sum(3)?)? * max_abs(k)?;
    let b_dk = scale * max_abs(&group_sum(&a.sum(2)?)?)? * max_abs(q)?;
    // D = <dO, O> from the output rounded to `dtype` (the fused backward reads the forward's
    // output as stored): |δD_i| ≤ eps(dtype)/2 · Σ_t |dO_it|·|O_it|. It enters dS_ij =
    // P_ij (dP_ij − D_i), so dq_i moves by ≤ |scale|·|δD_i|·Σ_j P_ij·max|k| ≤
    // |scale|·max|δD|·max|k|, and dk_j by ≤ |scale|·Σ_i P_ij |δD_i|·max|q|; dv has no D.
    let delta_d = (d_o.abs()? * out_t.abs()?)?.sum_keepdim(3)?.affine(dtype_epsilon(dtype) / 2.0, 0.0)?; // (b, h, sq, 1)
    let d_dq = scale * max_abs(&delta_d)? * max_abs(k)?;
    let d_dk = scale * max_abs(&group_sum(&probs.broadcast_mul(&delta_d)?.sum(2)?)?)? * max_abs(q)?;
    let round = |t: &Tensor| -> Result<f64> { Ok(dtype_epsilon(dtype) / 2.0 * max_abs(t)?) };
    Ok([
        round(&oracle[0])? + level(sk) * b_dq + d_dq,
        round(&oracle[1])? + level(sq * g) * b_dk + d_dk,
        round(&oracle[2])? + level(sq * g) * b_dv,
    ])
}

/// The size space of the gradient sweeps: the oracle and the naive path materialize
/// `Sq×Sk` scores, probabilities and their gradients in f64, so cases stay smaller than the
/// forward sweeps'.
pub fn grad_limits() -> super::Limits {
    super::Limits { max_seq: 300, max_decode_seq_k: 1024, decode_fraction: 0.1, max_work: 2_000_000 }
}

/// Draws `n` cases, checks dq, dk, dv of each, prints every failure with its seed and
/// configuration and a summary line; returns the number of failing cases.
pub fn run_grad_sweep(dev: &Device, dtype: DType, n: usize, seed: u64) -> Result<usize> {
    run_grad_sweep_with(dev, dtype, n, seed, &|_| Ok(()))
}

/// [`run_grad_sweep`] with `before` called ahead of every case (the GPU tests poison the
/// allocator's pool there, so that an element the backward never writes shows as NaN).
pub fn run_grad_sweep_with(
    dev: &Device,
    dtype: DType,
    n: usize,
    seed: u64,
    before: &dyn Fn(&Case) -> Result<()>,
) -> Result<usize> {
    let limits = grad_limits();
    let start = std::time::Instant::now();
    let (mut failures, mut worst) = (0, 0f64);
    for i in 0..n {
        let case = Case::random(super::case_seed(seed, i), &limits);
        before(&case)?;
        let results = check_grad_case(&case, dev, dtype)?;
        for r in &results {
            worst = worst.max(if r.allowed() > 0.0 { r.fused_max_abs / r.allowed() } else { r.fused_max_abs });
        }
        if results.iter().any(|r| !r.passes()) {
            failures += 1;
            println!("FAIL grad {dtype:?} {case:?}");
            for r in &results {
                println!(
                    "    {}: fused {:.3e} allowed {:.3e} (naive {:.3e}, floor {:.3e}) rel-L2 {:.3e} poisoned {}",
                    r.name,
                    r.fused_max_abs,
                    r.allowed(),
                    r.naive_max_abs,
                    r.floor,
                    r.fused_rel_l2,
                    r.poisoned
                );
            }
        }
    }
    println!(
        "grad sweep {dtype:?} on {:?}: {n} cases, {failures} failed, worst fused/allowed {worst:.3} ({:.1} s)",
        dev.location(),
        start.elapsed().as_secs_f64()
    );
    Ok(failures)
}

/// `attention_with_lse`'s LSE against the f64 oracle (`attention_ref_lse` on upcast inputs):
/// `max|fused − oracle| ≤ 2·max|naive − oracle| + floor` over the rows that see a key, where
/// naive is `attention_ref_lse` in the same dtype on the same device, and rows that see none
/// must be `-inf` exactly as in the oracle. The floor: the f32 rounding of `m + ln l`
/// (`2·eps(f32)·max|lse|`) and the score error of the forward's floor
/// (`sqrt(d)·u·|scale|·max‖q‖·max‖k‖`, `u = eps(f32)/2`), which shifts `ln Σ e^s` by at most
/// the largest score error. Returns (fused error, allowed).
pub fn check_lse_case(case: &Case, dev: &Device, dtype: DType) -> Result<(f64, f64)> {
    let (q, k, v, params) = case.inputs(dev, dtype)?;
    let (out, lse) = candle_fused_attn::attention_with_lse(&q, &k, &v, &params)?;
    let plain = attention(&q, &k, &v, &params)?;
    let same = (out.to_dtype(DType::F64)? - plain.to_dtype(DType::F64)?)?.abs()?.flatten_all()?.max(0)?;
    if out.elem_count() > 0 && same.to_scalar::<f64>()? != 0.0 {
        candle_core::bail!("attention_with_lse's output differs from attention's")
    }
    let naive = candle_fused_attn::attention_ref_lse(&q, &k, &v, &params)?;
    let cpu_params = params_on_cpu(&params)?;
    let [q64, k64, v64] = [&q, &k, &v].map(|t| t.to_device(&Device::Cpu).and_then(|t| t.to_dtype(DType::F64)));
    let (q64, k64, v64) = (q64?, k64?, v64?);
    let oracle = to_f64_vec(&candle_fused_attn::attention_ref_lse(&q64, &k64, &v64, &cpu_params)?)?;
    let (fused, naive) = (to_f64_vec(&lse)?, to_f64_vec(&naive)?);
    let mut err = (0f64, 0f64);
    for ((f, n), o) in fused.iter().zip(&naive).zip(&oracle) {
        if *o == f64::NEG_INFINITY {
            if *f != f64::NEG_INFINITY {
                candle_core::bail!("a row that sees no key has lse {f}, not -inf")
            }
            continue;
        }
        err = (err.0.max((f - o).abs()), err.1.max((n - o).abs()));
        if !f.is_finite() && o.is_finite() {
            err.0 = f64::INFINITY;
        }
    }
    let (_, _, _, d) = q64.dims4()?;
    let max_norm = |t: &Tensor| -> Result<f64> {
        Ok(to_f64_vec(t)?.chunks(d.max(1)).fold(0f64, |a, row| a.max(row.iter().map(|x| x * x).sum::<f64>().sqrt())))
    };
    let u = f32::EPSILON as f64 / 2.0;
    let max_lse = oracle.iter().filter(|x| x.is_finite()).fold(0f64, |a, x| a.max(x.abs()));
    let floor = 4.0 * u * max_lse
        + (d as f64).sqrt() * u * params.softmax_scale.abs() as f64 * max_norm(&q64)? * max_norm(&k64)?;
    Ok((err.0, 2.0 * err.1 + floor))
}
