//! The one reference: naive attention in plain candle ops, as candle-transformers' llama
//! computes it (matmul, mask, softmax, matmul, with `repeat_kv` for GQA). Every test and
//! bench compares against it. It materialises the `Sq×Sk` scores.
//!
//! It is differentiable: when an input is tracked for gradients it takes
//! `candle_nn::ops::softmax`, which has a backward, instead of `softmax_last_dim`, which
//! has none (candle-nn applies it without one, so a naive path built on it drops the
//! gradients of everything before the softmax). In f64 it is the gradient oracle.

use candle_core::{DType, Device, Result, Tensor, D};

use crate::packed::{validate_packed_shapes, Prefetched, Varlen};
use crate::problem::{validate_shapes_and_params, AttnParams, Problem};

/// Naive attention with exactly the semantics of [`crate::attention`].
///
/// The score and value products run in the input dtype; scale, softcap, ALiBi, mask and
/// softmax run in f32 (f64 for f64 inputs, which makes this the high-precision oracle when
/// fed upcast inputs). Memory is O(Sq·Sk) per head.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention_ref, AttnParams};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f64, 1., (1, 3, 2, 8), &Device::Cpu)?;
/// let out = attention_ref(&q, &q, &q, &AttnParams::new(0.35).causal(true))?;
/// assert_eq!(out.dims(), &[1, 3, 2, 8]);
/// # Ok(()) }
/// ```
pub fn attention_ref(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<Tensor> {
    let p = validate_shapes_and_params(q, k, v, params)?;
    reference(&p, q, k, v, params)
}

fn reference(p: &Problem, q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<Tensor> {
    let in_dtype = q.dtype();
    if p.batch * p.seq_q * p.heads * p.head_dim == 0 || p.seq_k == 0 {
        return crate::alloc::zeros_like(q);
    }
    let probs = probs(p, q, k, params)?;
    let v = repeat_kv(&v.transpose(1, 2)?, p.group_size())?; // (b, h, sk, d)
    let out = probs.to_dtype(in_dtype)?.matmul(&v)?; // (b, h, sq, d)
    out.transpose(1, 2)?.contiguous()
}

/// Naive attention over a packed (and possibly paged) batch, with exactly the semantics of
/// [`crate::attention_varlen`]: each sequence is sliced out (its keys gathered from the
/// pages) and attended by [`attention_ref`]'s computation with its own mask, multimodal
/// ranges included; the outputs are concatenated. The oracle of the varlen tests (fed
/// f64 inputs).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention_ref_varlen, AttnParams, Varlen};
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f64, 1., (5, 2, 8), &Device::Cpu)?;
/// let cu = Tensor::new(&[0u32, 2, 5], &Device::Cpu)?;
/// let out = attention_ref_varlen(&q, &q, &q, &Varlen::new(&cu, &cu, 3, 3), &AttnParams::new(0.3))?;
/// assert_eq!(out.dims(), &[5, 2, 8]);
/// # Ok(()) }
/// ```
pub fn attention_ref_varlen(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
) -> Result<Tensor> {
    let parts = per_sequence(q, k, v, varlen, params, reference)?;
    let parts = parts.into_iter().map(|t| t.squeeze(0)).collect::<Result<Vec<_>>>()?;
    if parts.iter().all(|t| t.elem_count() == 0) {
        return crate::alloc::zeros_like(q);
    }
    Tensor::cat(&parts, 0)
}

/// The per-row log-sum-exp `(heads, total_q)` of [`attention_ref_varlen`]; the oracle for
/// `attention_varlen_with_lse`.
#[doc(hidden)]
pub fn attention_ref_varlen_lse(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
) -> Result<Tensor> {
    let parts = per_sequence(q, k, v, varlen, params, |p, q, k, _, params| lse(p, q, k, params))?;
    let parts = parts.into_iter().map(|t| t.squeeze(0)).collect::<Result<Vec<_>>>()?;
    let dtype = if q.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
    if parts.iter().all(|t| t.elem_count() == 0) {
        return crate::alloc::zeros((q.dim(1)?, q.dim(0)?), dtype, q.device());
    }
    Tensor::cat(&parts, 1)
}

/// Runs `f` on each sequence of a packed batch as a dense batch-1 problem: q rows sliced
/// out, keys sliced out or gathered from their pages, the sequence's ALiBi slopes.
fn per_sequence(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    varlen: &Varlen,
    params: &AttnParams,
    f: impl Fn(&Problem, &Tensor, &Tensor, &Tensor, &AttnParams) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    let problem = validate_packed_shapes(q, k, v, varlen, params, Prefetched::default())?;
    let packed = problem.packed().cloned().expect("a packed problem");
    let (hk, d) = (problem.kv_heads, problem.head_dim);
    let mut parts = Vec::with_capacity(packed.batch());
    for b in 0..packed.batch() {
        let p = problem.sequence(b);
        let qb = q.narrow(0, packed.cu_q[b], p.seq_q)?.unsqueeze(0)?;
        let (kb, vb) = match &packed.pages {
            // No keys: empty views (a 0-row gather would allocate 0 bytes, which CUDA refuses).
            Some(pg) if p.seq_k == 0 => {
                let flat = |t: &Tensor| t.reshape((pg.num_blocks * pg.page_size, hk, d))?.narrow(0, 0, 0);
                (flat(k)?, flat(v)?)
            }
            None => (k.narrow(0, packed.cu_k[b], p.seq_k)?, v.narrow(0, packed.cu_k[b], p.seq_k)?),
            Some(pg) => {
                let rows: Vec<u32> = (0..p.seq_k)
                    .map(|j| {
                        (pg.table[b * pg.max_blocks + j / pg.page_size] as usize * pg.page_size + j % pg.page_size)
                            as u32
                    })
                    .collect();
                let idx = Tensor::from_vec(rows, p.seq_k, q.device())?;
                let flat = |t: &Tensor| t.reshape((pg.num_blocks * pg.page_size, hk, d));
                (flat(k)?.index_select(&idx, 0)?, flat(v)?.index_select(&idx, 0)?)
            }
        };
        let slopes = match &params.alibi_slopes {
            Some(s) if s.rank() == 2 => Some(s.narrow(0, b, 1)?),
            s => s.clone(),
        };
        let pb = AttnParams { alibi_slopes: slopes, ..params.clone() };
        parts.push(f(&p, &qb, &kb.unsqueeze(0)?, &vb.unsqueeze(0)?, &pb)?);
    }
    Ok(parts)
}

/// The attention probabilities `(batch, heads, seq_q, seq_k)` of [`attention_ref`], zero
/// where a key is masked (rows that see no key are all zero); f64 for f64 inputs, else f32.
/// The tests use them to bound the rounding error of gradients.
#[doc(hidden)]
pub fn attention_ref_probs(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<Tensor> {
    let p = validate_shapes_and_params(q, k, v, params)?;
    probs(&p, q, k, params)
}

/// The per-row log-sum-exp `(batch, heads, seq_q)` of [`attention_ref`]'s final scores
/// (natural log; `-inf` for a row that sees no key); f64 for f64 inputs, else f32. The
/// oracle for `attention_with_lse`.
#[doc(hidden)]
pub fn attention_ref_lse(q: &Tensor, k: &Tensor, v: &Tensor, params: &AttnParams) -> Result<Tensor> {
    let p = validate_shapes_and_params(q, k, v, params)?;
    lse(&p, q, k, params)
}

fn lse(p: &Problem, q: &Tensor, k: &Tensor, params: &AttnParams) -> Result<Tensor> {
    let dtype = if q.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
    if p.batch * p.heads * p.seq_q == 0 || p.seq_k == 0 {
        return crate::alloc::full(f64::NEG_INFINITY, (p.batch, p.heads, p.seq_q), dtype, q.device());
    }
    let (s, _) = scores(p, q, k, params)?;
    let m = s.max_keepdim(3)?;
    // A row with no visible key has m = -inf: shift it by 0 instead, so it sums to 0 → -inf.
    let finite = m.ne(f64::NEG_INFINITY)?;
    let shift = finite.where_cond(&m, &m.zeros_like()?)?;
    let sum = s.broadcast_sub(&shift)?.exp()?.sum_keepdim(3)?;
    (sum.log()? + shift)?.squeeze(3)
}

fn probs(p: &Problem, q: &Tensor, k: &Tensor, params: &AttnParams) -> Result<Tensor> {
    if p.batch * p.heads * p.seq_q == 0 || p.seq_k == 0 {
        // Nothing to normalize (candle's softmax takes no empty rows): every row sees no key.
        let dtype = if q.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
        return crate::alloc::zeros((p.batch, p.heads, p.seq_q, p.seq_k), dtype, q.device());
    }
    let tracked = q.track_op() || k.track_op();
    let (s, keep) = scores(p, q, k, params)?;
    let probs = if tracked { candle_nn::ops::softmax(&s, D::Minus1)? } else { candle_nn::ops::softmax_last_dim(&s)? };
    // Rows with no visible key come out of the softmax as NaN; they are defined as zeros.
    keep.where_cond(&probs, &probs.zeros_like()?)
}

/// The final scores `(batch, heads, seq_q, seq_k)` (scale, softcap, ALiBi; `-inf` where
/// masked) in f32 (f64 for f64 inputs), and the `u8` mask of visible keys broadcast to them.
fn scores(p: &Problem, q: &Tensor, k: &Tensor, params: &AttnParams) -> Result<(Tensor, Tensor)> {
    let soft_dtype = if q.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
    let dev = q.device();

    let q = q.transpose(1, 2)?.contiguous()?; // (b, h, sq, d)
    let k = repeat_kv(&k.transpose(1, 2)?, p.group_size())?; // (b, h, sk, d)

    let mut s = q.matmul(&k.t()?)?.to_dtype(soft_dtype)?.affine(p.scale as f64, 0.0)?;
    if p.softcap > 0.0 {
        let c = p.softcap as f64;
        s = s.affine(1.0 / c, 0.0)?.tanh()?.affine(c, 0.0)?;
    }
    if let Some(slopes) = &params.alibi_slopes {
        let slopes = slopes.broadcast_as((p.batch, p.heads))?.to_dtype(soft_dtype)?;
        let dist = alibi_distance(p, dev)?.to_dtype(soft_dtype)?;
        let bias = slopes.reshape((p.batch, p.heads, 1, 1))?.broadcast_mul(&dist)?;
        s = (s - bias)?;
    }
    let keep = visible_mask(p, dev)?.broadcast_as(s.shape())?;
    let neg_inf = Tensor::new(f64::NEG_INFINITY, dev)?.to_dtype(soft_dtype)?.broadcast_as(s.shape())?;
    Ok((keep.where_cond(&s, &neg_inf)?, keep))
}

/// `(b, hkv, s, d)` → `(b, hkv·n_rep, s, d)`, as candle-transformers does it.
fn repeat_kv(x: &Tensor, n_rep: usize) -> Result<Tensor> {
    let (b, hkv, s, d) = x.dims4()?;
    if n_rep == 1 {
        return x.contiguous();
    }
    x.unsqueeze(2)?.broadcast_as((b, hkv, n_rep, s, d))?.contiguous()?.reshape((b, hkv * n_rep, s, d))
}

/// `(sq, sk)` u8: 1 where query row i may see key j.
fn visible_mask(p: &Problem, dev: &Device) -> Result<Tensor> {
    let mut m = vec![0u8; p.seq_q * p.seq_k];
    for i in 0..p.seq_q {
        let (lo, hi) = p.key_range(i);
        m[i * p.seq_k + lo..i * p.seq_k + hi].fill(1);
    }
    Tensor::from_vec(m, (p.seq_q, p.seq_k), dev)
}

/// `(sq, sk)` f64: `|i + sk - sq - j|`.
fn alibi_distance(p: &Problem, dev: &Device) -> Result<Tensor> {
    let mut m = vec![0f64; p.seq_q * p.seq_k];
    for i in 0..p.seq_q {
        let d = p.diag(i);
        for j in 0..p.seq_k {
            m[i * p.seq_k + j] = (d - j as i64).unsigned_abs() as f64;
        }
    }
    Tensor::from_vec(m, (p.seq_q, p.seq_k), dev)
}
