//! The public functions: the general entry [`attention`] and the drop-ins for
//! `candle-flash-attn` 0.11's dense functions. Each validates, then applies the op.

use candle_core::{Result, Tensor};

use crate::op::FusedAttention;
#[allow(unused_imports)] // named by the docs
use crate::problem::MAX_HEAD_DIM;
use crate::problem::{validate, AttnParams};

/// Makes the head dim contiguous (a copy) only when it is not; other strides are kept.
fn head_dim_contiguous(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    if l.dims()[3] <= 1 || l.stride()[3] == 1 {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}

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
    let problem = validate(q, k, v, params)?;
    let (b, sq, h, d) = (problem.batch, problem.seq_q, problem.heads, problem.head_dim);
    if b * sq * h * d == 0 {
        // Nothing to compute: the empty result is well defined.
        return Tensor::zeros(q.shape(), q.dtype(), q.device());
    }
    if problem.seq_k == 0 {
        // Every row has no visible key: zeros by definition.
        return Tensor::zeros(q.shape(), q.dtype(), q.device());
    }
    let alibi = match &params.alibi_slopes {
        None => None,
        Some(s) => Some(s.broadcast_as((b, h))?.contiguous()?),
    };
    let op = FusedAttention { problem, alibi };
    let (q, k, v) = (head_dim_contiguous(q)?, head_dim_contiguous(k)?, head_dim_contiguous(v)?);
    q.apply_op3_no_bwd(&k, &v, &op)
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
