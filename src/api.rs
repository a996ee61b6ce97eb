//! The public functions: the general entry [`attention`] and the drop-ins for
//! `candle-flash-attn` 0.11's dense functions, and [`attention_with_lse`]. Each validates,
//! then applies the op, which is differentiable (see `op.rs`).

use candle_core::{bail, Result, Tensor};

use crate::op::FusedAttention;
#[allow(unused_imports)] // named by the docs
use crate::problem::MAX_HEAD_DIM;
use crate::problem::{head_dim_contiguous, validate, AttnParams, Problem};

/// Fused attention: the general entry point that every other function wraps.
///
/// See the crate docs for the exact semantics. Errors (never panics) on bad ranks, shapes,
/// dtypes, devices, head dims above [`MAX_HEAD_DIM`], bad ALiBi slopes and contradictory
/// windows.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention, AttnParams};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (2, 5, 4, 32), &dev)?.to_dtype(candle_core::DType::BF16)?;
/// let kv = Tensor::randn(0f32, 1., (2, 9, 1, 32), &dev)?.to_dtype(candle_core::DType::BF16)?; // MQA
/// let slopes = Tensor::new(&[0.5f32, 0.25, 0.125, 0.0625], &dev)?;
/// let p = AttnParams::new(0.17).window(Some(3), Some(0)).softcap(20.0).alibi_slopes(&slopes);
/// let out = attention(&q, &kv, &kv, &p)?;
/// assert_eq!(out.dims(), &[2, 5, 4, 32]);
/// # Ok(()) }
/// ```
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<Tensor> {
    Ok(run(q, k, v, params, false)?.0)
}

/// [`attention`] that also returns the per-row log-sum-exp of the scores.
///
/// `lse` has shape `(batch, heads, seq_q)`, f32: `lse[b, h, i] = ln Σ_j exp(s_ij)` over the
/// keys row `i` sees, with `s_ij` the final score (after scale, softcap, ALiBi and the mask);
/// `-inf` for a row that sees no key. The output is differentiable; the LSE is not (it has
/// no gradient graph).
///
/// **Merging partial attentions.** Attention over keys `K = K₁ ∪ K₂` (KV shards across
/// devices, a shared prefix plus a per-request suffix, ...) is a weighted sum of the two
/// partial results: with `m = max(lse₁, lse₂)` and `wₙ = exp(lseₙ − m)`,
/// `out = (w₁·out₁ + w₂·out₂) / (w₁ + w₂)` and `lse = m + ln(w₁ + w₂)` (per row and head;
/// the LSE is `(b, h, sq)`, the output `(b, sq, h, d)`).
///
/// ```
/// use candle_core::{Device, Tensor, D};
/// use candle_fused_attn::{attention, attention_with_lse, AttnParams};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (2, 5, 4, 32), &dev)?;
/// let k = Tensor::randn(0f32, 1., (2, 40, 2, 32), &dev)?;
/// let v = Tensor::randn(0f32, 1., (2, 40, 2, 32), &dev)?;
/// let p = AttnParams::new(0.18);
/// // Two halves of the KV cache, attended separately...
/// let (o1, l1) = attention_with_lse(&q, &k.narrow(1, 0, 25)?, &v.narrow(1, 0, 25)?, &p)?;
/// let (o2, l2) = attention_with_lse(&q, &k.narrow(1, 25, 15)?, &v.narrow(1, 25, 15)?, &p)?;
/// // ...and merged with their LSEs, (b, h, sq) -> (b, sq, h, 1) to weight the outputs.
/// let m = l1.maximum(&l2)?;
/// let w1 = (l1 - &m)?.exp()?.transpose(1, 2)?.unsqueeze(D::Minus1)?;
/// let w2 = (l2 - &m)?.exp()?.transpose(1, 2)?.unsqueeze(D::Minus1)?;
/// let merged = (o1.broadcast_mul(&w1)? + o2.broadcast_mul(&w2)?)?.broadcast_div(&(w1 + w2)?)?;
/// let full = attention(&q, &k, &v, &p)?;
/// let err = (merged - full)?.abs()?.max_all()?.to_scalar::<f32>()?;
/// assert!(err < 1e-5, "{err}");
/// # Ok(()) }
/// ```
pub fn attention_with_lse(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<(Tensor, Tensor)> {
    let (out, lse) = run(q, k, v, params, true)?;
    match lse {
        Some(lse) => Ok((out, lse)),
        None => bail!("fused-attn internal: no log-sum-exp came back"),
    }
}

/// The backward of [`attention`] as a plain function: `(dq, dk, dv)` from q, k, v, the
/// forward's output `out`, its gradient `grad_out` and the LSE that [`attention_with_lse`]
/// returned, with the same `params`.
///
/// Autograd already calls this when q, k or v are variables; use it directly in a training
/// loop of your own, or to time the backward alone. The gradients have the inputs' dtype,
/// contiguous; dk and dv are summed over each kv head's group of q heads (GQA); ALiBi slopes
/// get no gradient. Memory is O(S·D): the `Sq×Sk` scores are recomputed from the LSE.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention_backward, attention_with_lse, AttnParams};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (1, 6, 4, 16), &dev)?;
/// let kv = Tensor::randn(0f32, 1., (1, 9, 2, 16), &dev)?;
/// let p = AttnParams::new(0.25).causal(true);
/// let (out, lse) = attention_with_lse(&q, &kv, &kv, &p)?;
/// let grad_out = Tensor::ones_like(&out)?;
/// let (dq, dk, dv) = attention_backward(&q, &kv, &kv, &out, &grad_out, &lse, &p)?;
/// assert_eq!((dq.dims(), dk.dims(), dv.dims()), (q.dims(), kv.dims(), kv.dims()));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    grad_out: &Tensor,
    lse: &Tensor,
    params: &AttnParams,
) -> Result<(Tensor, Tensor, Tensor)> {
    let problem = validate(q, k, v, params)?;
    let (b, sq, h, d) = (problem.batch, problem.seq_q, problem.heads, problem.head_dim);
    for (name, t) in [("out", out), ("grad_out", grad_out)] {
        if t.dims() != q.dims() {
            bail!("fused-attn: {name} must have q's shape {:?}, got {:?}", q.dims(), t.dims())
        }
        if !t.device().same_device(q.device()) {
            bail!("fused-attn: {name} is on {:?} but q is on {:?}", t.device().location(), q.device().location())
        }
    }
    if out.dtype() != q.dtype() {
        bail!("fused-attn: out must have q's dtype {:?}, got {:?}", q.dtype(), out.dtype())
    }
    if lse.dims() != [b, h, sq] || lse.dtype() != candle_core::DType::F32 || !lse.device().same_device(q.device()) {
        bail!(
            "fused-attn: lse must be f32 of shape ({b}, {h}, {sq}) on q's device, got {:?} of shape {:?} on {:?}",
            lse.dtype(),
            lse.dims(),
            lse.device().location()
        )
    }
    if b * sq * h * d == 0 || problem.seq_k == 0 {
        // No dot products: every gradient is zero.
        return Ok((q.zeros_like()?, k.zeros_like()?, v.zeros_like()?));
    }
    let alibi = match &params.alibi_slopes {
        None => None,
        Some(s) => Some(s.broadcast_as((b, h))?.contiguous()?),
    };
    let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
    crate::op::backward(&problem, alibi.as_ref(), &q, &k, &v, out, grad_out, lse)
}

/// Validates, applies the op, and returns the LSE when `want_lse`.
fn run(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams, want_lse: bool) -> Result<(Tensor, Option<Tensor>)> {
    let mut problem = validate(q, k, v, params)?;
    let (b, sq, h, d) = (problem.batch, problem.seq_q, problem.heads, problem.head_dim);
    if b * sq * h * d == 0 || problem.seq_k == 0 {
        // Nothing to compute, or no row sees a key: zeros by definition. These outputs do not
        // depend on q, k or v, so they carry no gradient graph.
        let out = Tensor::zeros(q.shape(), q.dtype(), q.device())?;
        let lse = if want_lse { Some(lse_without_products(&problem, params, q.device())?) } else { None };
        return Ok((out, lse));
    }
    let alibi = match &params.alibi_slopes {
        None => None,
        Some(s) => Some(s.broadcast_as((b, h))?.contiguous()?),
    };
    // The backward needs the LSE: keep it whenever gradients can flow.
    problem.want_lse = want_lse || q.track_op() || k.track_op() || v.track_op();
    let op = FusedAttention::new(problem, alibi);
    let slot = op.lse.clone();
    let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
    let out = q.apply_op3(&k, &v, op)?;
    let lse = if want_lse { Some(FusedAttention::kept_lse(&slot)?) } else { None };
    Ok((out, lse))
}

/// The LSE of a problem with no dot products to compute (`seq_k == 0`, `head_dim == 0` or an
/// empty batch/head/query dim): every score is the ALiBi bias alone (softcap(0) = 0), and a
/// row with no visible key has `-inf`.
fn lse_without_products(p: &Problem, params: &AttnParams, dev: &candle_core::Device) -> Result<Tensor> {
    let slopes = match &params.alibi_slopes {
        Some(s) if p.batch * p.heads > 0 => s.broadcast_as((p.batch, p.heads))?.flatten_all()?.to_vec1::<f32>()?,
        _ => vec![0f32; p.batch * p.heads],
    };
    let mut lse = vec![f32::NEG_INFINITY; p.batch * p.heads * p.seq_q];
    for (bh, row) in lse.chunks_mut(p.seq_q.max(1)).enumerate().take(p.batch * p.heads) {
        for (i, x) in row.iter_mut().enumerate() {
            let (lo, hi) = p.key_range(i);
            let s = |j: usize| -(slopes[bh] as f64) * (p.diag(i) - j as i64).unsigned_abs() as f64;
            let m = (lo..hi).map(s).fold(f64::NEG_INFINITY, f64::max);
            if m > f64::NEG_INFINITY {
                *x = (m + (lo..hi).map(|j| (s(j) - m).exp()).sum::<f64>().ln()) as f32;
            }
        }
    }
    Tensor::from_vec(lse, (p.batch, p.heads, p.seq_q), dev)
}

/// Drop-in for `candle_flash_attn::flash_attn`: scaled dot-product attention, optionally
/// causal (bottom-right aligned).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 4, 2, 16), &Device::Cpu)?;
/// let out = candle_fused_attn::flash_attn(&q, &q, &q, 0.25, true)?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
pub fn flash_attn(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool) -> Result<Tensor> {
    attention(q, k, v, &AttnParams::new(softmax_scale).causal(causal))
}

/// Drop-in for `candle_flash_attn::flash_attn_windowed`: sliding-window attention.
/// `(None, Some(0))` is causal.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 6, 2, 16), &Device::Cpu)?;
/// let out = candle_fused_attn::flash_attn_windowed(&q, &q, &q, 0.25, Some(2), Some(0))?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
pub fn flash_attn_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
) -> Result<Tensor> {
    attention(q, k, v, &AttnParams::new(softmax_scale).window(window_size_left, window_size_right))
}

/// Drop-in for `candle_flash_attn::flash_attn_alibi`: attention with ALiBi slopes
/// (f32, shape `(heads)` or `(batch, heads)`).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 6, 2, 16), &Device::Cpu)?;
/// let slopes = Tensor::new(&[0.5f32, 0.25], &Device::Cpu)?;
/// let out = candle_fused_attn::flash_attn_alibi(&q, &q, &q, &slopes, 0.25, true)?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
pub fn flash_attn_alibi(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: &Tensor,
    softmax_scale: f32,
    causal: bool,
) -> Result<Tensor> {
    attention(q, k, v, &AttnParams::new(softmax_scale).causal(causal).alibi_slopes(alibi_slopes))
}

/// Drop-in for `candle_flash_attn::flash_attn_alibi_windowed`.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 6, 2, 16), &Device::Cpu)?;
/// let slopes = Tensor::new(&[0.5f32, 0.25], &Device::Cpu)?;
/// let out = candle_fused_attn::flash_attn_alibi_windowed(&q, &q, &q, &slopes, 0.25, Some(3), None)?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
pub fn flash_attn_alibi_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: &Tensor,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
) -> Result<Tensor> {
    let p = AttnParams::new(softmax_scale).window(window_size_left, window_size_right).alibi_slopes(alibi_slopes);
    attention(q, k, v, &p)
}

/// Drop-in for `candle_flash_attn::flash_attn_alibi_windowed_softcap`. A `softcap` of 0
/// means none.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 6, 2, 16), &Device::Cpu)?;
/// let out = candle_fused_attn::flash_attn_alibi_windowed_softcap(&q, &q, &q, None, 0.25, None, Some(0), 30.0)?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_alibi_windowed_softcap(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: Option<&Tensor>,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
    softcap: f32,
) -> Result<Tensor> {
    let mut p = AttnParams::new(softmax_scale).window(window_size_left, window_size_right).softcap(softcap);
    p.alibi_slopes = alibi_slopes.cloned();
    attention(q, k, v, &p)
}
