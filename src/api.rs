//! The general entries: [`attention`] (dense), [`attention_varlen`] (packed and paged), the
//! same with the log-sum-exp, [`attention_varlen_into`] (a caller-owned output) and
//! [`attention_backward`]. Each validates, then applies the op, which is differentiable
//! (see `op.rs`), except [`attention_varlen_into`]'s in-place one, which refuses inputs
//! that track gradients. The candle-flash-attn drop-ins in `dropin.rs` wrap them.

use candle_core::{bail, Result, Tensor};

use crate::op::FusedAttention;
use crate::packed::{validate_packed, Varlen};
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
    check_backward_inputs(&problem, q, out, grad_out, lse)?;
    if b * sq * h * d == 0 || problem.seq_k == 0 {
        // No dot products: every gradient is zero.
        return Ok((crate::alloc::zeros_like(q)?, crate::alloc::zeros_like(k)?, crate::alloc::zeros_like(v)?));
    }
    let alibi = match &params.alibi_slopes {
        None => None,
        Some(s) => Some(s.broadcast_as((b, h))?.contiguous()?),
    };
    let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
    crate::op::backward(&problem, alibi.as_ref(), &q, &k, &v, out, grad_out, lse)
}

/// Fused attention over a packed batch of sequences of different lengths, its K/V
/// optionally a paged cache: the general entry that the `flash_attn_varlen*` drop-ins wrap.
///
/// q is `(total_q, heads, head_dim)`, k and v `(total_k, kv_heads, head_dim)` or, paged,
/// `(num_blocks, page_block_size, kv_heads, head_dim)`; [`Varlen`] says which rows belong to
/// which sequence. Each sequence is attended as a dense call on it alone would be: every
/// [`AttnParams`] feature, masks aligned bottom-right per sequence, ALiBi slopes of shape
/// `(heads)` or `(batch, heads)`, GQA without copies; multimodal prefix ranges on top. A row
/// with no visible key (a sequence with no keys, say) outputs zeros. The output has q's
/// shape and dtype. Differentiable unless the K/V are paged.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention_varlen, AttnParams, Varlen};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// // Two sequences, 2 and 1 new tokens, against cached contexts of 40 and 7 keys, in a paged
/// // cache of 16-key blocks shared by both (blocks listed in any order).
/// let q = Tensor::randn(0f32, 1., (3, 8, 64), &dev)?;
/// let cache_k = Tensor::randn(0f32, 1., (6, 16, 2, 64), &dev)?;
/// let cache_v = Tensor::randn(0f32, 1., (6, 16, 2, 64), &dev)?;
/// let table = Tensor::new(&[[4u32, 0, 2], [5, 0, 0]], &dev)?;
/// let vl = Varlen::new(&Tensor::new(&[0u32, 2, 3], &dev)?, &Tensor::new(&[0u32, 40, 47], &dev)?, 2, 40)
///     .paged(&table, 16);
/// let out = attention_varlen(&q, &cache_k, &cache_v, &vl, &AttnParams::new(0.125).causal(true))?;
/// assert_eq!(out.dims(), &[3, 8, 64]);
/// # Ok(()) }
/// ```
pub fn attention_varlen(q: &Tensor, k: &Tensor, v: &Tensor, varlen: &Varlen, params: &AttnParams) -> Result<Tensor> {
    Ok(run_packed(q, k, v, varlen, params, false)?.0)
}

/// [`attention_varlen`] written into a caller-owned output, as FlashAttention's `out=`
/// argument: `out` gets the packed result, every element of it, whatever it held.
///
/// A server that keeps one output buffer between calls pays no page faults for a fresh one:
/// glibc maps buffers over 32 MiB afresh on every call, and a packed batch's output often is
/// one (41 MiB at 10,130 rows × 16 heads × d64 in f32).
///
/// `out` must have q's shape `(total_q, heads, head_dim)`, dtype and device, be contiguous
/// (a narrow of a larger buffer along its first dim is), and share no storage with q, k or
/// v. Everything [`attention_varlen`] takes works here too (paged caches, windows, ALiBi,
/// prefix ranges), with the same bits on the CPU. Errors, naming the values, on a bad
/// `out`; and on inputs that track gradients (`out` is written in place, which carries no
/// gradient graph: use [`attention_varlen`] for training). On CUDA the kernels store straight
/// into `out` (when it starts 16-byte aligned; otherwise through one device-to-device copy),
/// for servers that keep static output buffers. On an error `out`'s contents are unspecified:
/// with GPU index tensors on candle's default device the call may have launched on the last
/// call's index values before it found its own invalid (see the README's index tensors).
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// use candle_fused_attn::{attention_varlen, attention_varlen_into, AttnParams, Varlen};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (8, 4, 16), &dev)?;
/// let kv = Tensor::randn(0f32, 1., (8, 2, 16), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 8], &dev)?;
/// let (vl, p) = (Varlen::new(&cu, &cu, 5, 5), AttnParams::new(0.25).causal(true));
/// let out = Tensor::zeros((8, 4, 16), DType::F32, &dev)?; // allocated once, reused per call
/// attention_varlen_into(&out, &q, &kv, &kv, &vl, &p)?;
/// let want = attention_varlen(&q, &kv, &kv, &vl, &p)?;
/// assert_eq!(out.flatten_all()?.to_vec1::<f32>()?, want.flatten_all()?.to_vec1::<f32>()?);
/// # Ok(()) }
/// ```
pub fn attention_varlen_into(
    out: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
) -> Result<()> {
    if q.track_op() || k.track_op() || v.track_op() {
        bail!(
            "fused-attn: attention_varlen_into writes out in place, which carries no gradient graph, but q, k or v tracks gradients; use attention_varlen for training (or detach the inputs)"
        )
    }
    check_into_output(out, q, k, v)?;
    // A wrong guess is written into out, then overwritten by the run on the values read (or
    // left there when those fail validation).
    on_packed(q, k, v, varlen, params, |problem| into_validated(out, q, k, v, problem, params))
}

/// Validates a packed call and runs `then` on its problem, on index values read or guessed
/// (src/op.rs `with_indices`): `then` may run twice, its first result dropped, so it returns
/// fresh tensors or writes a caller's buffer whole.
fn on_packed<T>(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
    then: impl Fn(Problem) -> Result<T>,
) -> Result<T> {
    crate::op::with_indices(q, varlen, |pre| then(validate_packed(q, k, v, varlen, params, pre)?))
}

/// [`attention_varlen_into`] on a validated problem, `out` checked.
fn into_validated(
    out: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    problem: Problem,
    params: &AttnParams,
) -> Result<()> {
    let packed = problem.packed().cloned().expect("validate_packed returns a packed problem");
    if packed.total_q() * problem.heads * problem.head_dim == 0 {
        return Ok(()); // out has no elements
    }
    // Made before any storage is locked (the slopes may share one with out): on the CPU read
    // to the host, on a GPU a fresh contiguous copy.
    let alibi = match &params.alibi_slopes {
        None => crate::op::IntoSlopes::None,
        Some(s) if q.device().is_cpu() => crate::op::IntoSlopes::Host(
            s.broadcast_as((problem.batch, problem.heads))?.flatten_all()?.to_vec1::<f32>()?,
        ),
        // `copy` keeps the layout: made contiguous first (a per-head `(heads)` vector is a
        // stride-0 broadcast here), then copied so that no storage is shared with out.
        Some(s) => crate::op::IntoSlopes::Device(s.broadcast_as((problem.batch, problem.heads))?.contiguous()?.copy()?),
    };
    let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
    crate::op::forward_into(problem, alibi, &q, &k, &v, out)
}

/// The checks [`attention_varlen_into`] makes on its `out`.
fn check_into_output(out: &Tensor, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<()> {
    if out.dims() != q.dims() {
        bail!("fused-attn: out must have q's shape {:?} (total_q, heads, head_dim), got {:?}", q.dims(), out.dims())
    }
    if out.dtype() != q.dtype() {
        bail!("fused-attn: out must have q's dtype {:?}, got {:?}", q.dtype(), out.dtype())
    }
    if !out.device().same_device(q.device()) {
        bail!("fused-attn: out is on {:?} but q is on {:?}", out.device().location(), q.device().location())
    }
    if out.layout().contiguous_offsets().is_none() {
        bail!(
            "fused-attn: out must be contiguous (row-major, or a narrow of such a buffer along its first dim), got shape {:?} with strides {:?}",
            out.dims(),
            out.stride()
        )
    }
    let out_id = crate::op::storage_id(out);
    for (name, t) in [("q", q), ("k", k), ("v", v)] {
        if crate::op::storage_id(t) == out_id {
            bail!(
                "fused-attn: out shares its storage with {name}; attention_varlen_into reads q, k and v while it writes out, so out must be a buffer of its own"
            )
        }
    }
    Ok(())
}

/// [`attention_varlen`] that also returns the per-row log-sum-exp, `(heads, total_q)` f32
/// (the packed form of [`attention_with_lse`]'s; the same merge formula applies per row).
pub fn attention_varlen_with_lse(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
) -> Result<(Tensor, Tensor)> {
    let (out, lse) = run_packed(q, k, v, varlen, params, true)?;
    match lse {
        Some(lse) => Ok((out, lse)),
        None => bail!("fused-attn internal: no log-sum-exp came back"),
    }
}

/// The backward of [`attention_varlen`] (packed, unpaged K/V) as a plain function: `(dq, dk,
/// dv)` in q's, k's and v's packed shapes from the forward's output `out` (q's shape), its
/// gradient `grad_out` and the `(heads, total_q)` LSE that [`attention_varlen_with_lse`]
/// returned, with the same `varlen` and `params`. What autograd runs for `attention_varlen`;
/// as [`attention_backward`] for a dense call, per sequence.
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    grad_out: &Tensor,
    lse: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
) -> Result<(Tensor, Tensor, Tensor)> {
    on_packed(q, k, v, varlen, params, |problem| {
        let packed = problem.packed().cloned().expect("validate_packed returns a packed problem");
        if packed.pages.is_some() {
            bail!("fused-attn: attention over a paged KV cache has no backward; pass k and v packed")
        }
        check_backward_inputs(&problem, q, out, grad_out, lse)?;
        if packed.total_q() * problem.heads * problem.head_dim == 0 || packed.cu_k[packed.batch()] == 0 {
            // No dot products: every gradient is zero.
            return Ok((crate::alloc::zeros_like(q)?, crate::alloc::zeros_like(k)?, crate::alloc::zeros_like(v)?));
        }
        let alibi = match &params.alibi_slopes {
            None => None,
            Some(s) => Some(s.broadcast_as((problem.batch, problem.heads))?.contiguous()?),
        };
        let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
        crate::op::backward(&problem, alibi.as_ref(), &q, &k, &v, out, grad_out, lse)
    })
}

/// The checks both backward entries make on the forward's output, its gradient and the LSE
/// (shape `problem.lse_shape()`).
fn check_backward_inputs(problem: &Problem, q: &Tensor, out: &Tensor, grad_out: &Tensor, lse: &Tensor) -> Result<()> {
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
    let lse_shape = problem.lse_shape();
    if lse.dims() != lse_shape.as_slice()
        || lse.dtype() != candle_core::DType::F32
        || !lse.device().same_device(q.device())
    {
        bail!(
            "fused-attn: lse must be f32 of shape {lse_shape:?} on q's device, got {:?} of shape {:?} on {:?}",
            lse.dtype(),
            lse.dims(),
            lse.device().location()
        )
    }
    Ok(())
}

fn run_packed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
    want_lse: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    on_packed(q, k, v, varlen, params, |problem| run_validated(q, k, v, problem, params, want_lse))
}

/// [`run_packed`] on a validated problem.
fn run_validated(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    problem: Problem,
    params: &AttnParams,
    want_lse: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let packed = problem.packed().cloned().expect("validate_packed returns a packed problem");
    if packed.pages.is_some() && (q.track_op() || k.track_op() || v.track_op()) {
        bail!(
            "fused-attn: attention over a paged KV cache has no backward; detach q, k and v (paged caches serve inference), or pass k and v packed"
        )
    }
    if packed.total_q() * problem.heads * problem.head_dim == 0 {
        let out = crate::alloc::zeros_like(q)?;
        let lse = if want_lse {
            let mut rows = Vec::with_capacity(packed.batch());
            for b in 0..packed.batch() {
                let seq = problem.sequence(b);
                let slopes = match &params.alibi_slopes {
                    Some(s) if s.rank() == 2 => Some(s.narrow(0, b, 1)?),
                    s => s.clone(),
                };
                let sp = AttnParams { alibi_slopes: slopes, ..params.clone() };
                rows.push(lse_without_products(&seq, &sp, q.device())?.squeeze(0)?);
                // (h, sq_b)
            }
            Some(if rows.iter().all(|r| r.elem_count() == 0) {
                crate::alloc::zeros((problem.heads, packed.total_q()), candle_core::DType::F32, q.device())?
            } else {
                Tensor::cat(&rows, 1)?
            })
        } else {
            None
        };
        return Ok((out, lse));
    }
    apply(q, k, v, problem, params, want_lse)
}

/// Validates, applies the op, and returns the LSE when `want_lse`.
fn run(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams, want_lse: bool) -> Result<(Tensor, Option<Tensor>)> {
    let problem = validate(q, k, v, params)?;
    let (b, sq, h, d) = (problem.batch, problem.seq_q, problem.heads, problem.head_dim);
    if b * sq * h * d == 0 || problem.seq_k == 0 {
        // Nothing to compute, or no row sees a key: zeros by definition. These outputs do not
        // depend on q, k or v, so they carry no gradient graph.
        let out = crate::alloc::zeros_like(q)?;
        let lse = if want_lse { Some(lse_without_products(&problem, params, q.device())?) } else { None };
        return Ok((out, lse));
    }
    apply(q, k, v, problem, params, want_lse)
}

/// Applies the op to a validated problem with work to do; returns the LSE when `want_lse`.
fn apply(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mut problem: Problem,
    params: &AttnParams,
    want_lse: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let (b, h) = (problem.batch, problem.heads);
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
    // Per (batch, head), or none: without ALiBi every slope is 0 (and batch × heads may be
    // far larger than memory when head_dim is 0).
    let slopes = match &params.alibi_slopes {
        Some(s) if p.batch * p.heads > 0 => s.broadcast_as((p.batch, p.heads))?.flatten_all()?.to_vec1::<f32>()?,
        _ => Vec::new(),
    };
    let slope = |bh: usize| slopes.get(bh).copied().unwrap_or(0.0);
    let mut lse = crate::alloc::try_vec(p.batch * p.heads * p.seq_q, f32::NEG_INFINITY, "the LSE")?;
    for (bh, row) in lse.chunks_mut(p.seq_q.max(1)).enumerate().take(p.batch * p.heads) {
        for (i, x) in row.iter_mut().enumerate() {
            let (lo, hi) = p.key_range(i);
            if slope(bh) == 0.0 {
                // Every visible score is 0: the sum below is the count, exactly.
                if hi > lo {
                    *x = ((hi - lo) as f64).ln() as f32;
                }
                continue;
            }
            let s = |j: usize| -(slope(bh) as f64) * (p.diag(i) - j as i64).unsigned_abs() as f64;
            let m = (lo..hi).map(s).fold(f64::NEG_INFINITY, f64::max);
            if m > f64::NEG_INFINITY {
                *x = (m + (lo..hi).map(|j| (s(j) - m).exp()).sum::<f64>().ln()) as f32;
            }
        }
    }
    if lse.is_empty() {
        return crate::alloc::zeros((p.batch, p.heads, p.seq_q), candle_core::DType::F32, dev);
    }
    Tensor::from_vec(lse, (p.batch, p.heads, p.seq_q), dev)
}
