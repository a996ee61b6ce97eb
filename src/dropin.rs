//! Drop-ins for candle-flash-attn 0.11.1's public API: its eleven functions and its op
//! struct [`FlashAttn`], with the same names, argument order, types and semantics, on every
//! device. Code written against candle-flash-attn compiles against this crate after only its
//! `use` line changes (`tests/dropin.rs` shows it). Each function wraps [`attention`] or
//! [`attention_varlen`].
//!
//! Where candle-flash-attn differs from its own docs or limits itself, these follow the
//! semantics of the crate docs: every head dim up to [`crate::MAX_HEAD_DIM`], f32 too, any
//! page size, index tensors on the CPU or the GPU, and errors instead of out-of-bounds reads.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};

use crate::api::{attention, attention_backward, attention_varlen, attention_with_lse};
use crate::op::FusedAttention;
use crate::packed::Varlen;
use crate::problem::{validate_dims, AttnParams};

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

/// Drop-in for `candle_flash_attn::flash_attn_varlen`: attention over a packed batch.
///
/// q is `(total_q, heads, head_dim)`, k and v `(total_k, kv_heads, head_dim)`; `seqlens_q`
/// and `seqlens_k` are the `batch + 1` cumulative lengths (u32), `max_seqlen_q/k` at least
/// the longest sequence. Causal masks align bottom-right per sequence.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (7, 4, 32), &dev)?; // sequences of 3 and 4 tokens
/// let kv = Tensor::randn(0f32, 1., (7, 2, 32), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 7], &dev)?;
/// let out = candle_fused_attn::flash_attn_varlen(&q, &kv, &kv, &cu, &cu, 4, 4, 0.18, true)?;
/// assert_eq!(out.dims(), &[7, 4, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    causal: bool,
) -> Result<Tensor> {
    let vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k);
    attention_varlen(q, k, v, &vl, &AttnParams::new(softmax_scale).causal(causal))
}

/// Drop-in for `candle_flash_attn::flash_attn_varlen_windowed`: [`flash_attn_varlen`] with
/// a sliding window; `(None, Some(0))` is causal.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (7, 4, 32), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 7], &dev)?;
/// let out = candle_fused_attn::flash_attn_varlen_windowed(&q, &q, &q, &cu, &cu, 4, 4, 0.18, Some(2), Some(0))?;
/// assert_eq!(out.dims(), &[7, 4, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
) -> Result<Tensor> {
    let vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k);
    attention_varlen(q, k, v, &vl, &AttnParams::new(softmax_scale).window(window_size_left, window_size_right))
}

/// Drop-in for `candle_flash_attn::flash_attn_varlen_paged_windowed`: a packed batch of
/// queries against a paged KV cache.
///
/// k and v are `(num_blocks, page_block_size, kv_heads, head_dim)`; `block_table`
/// `(batch, max_blocks)` (u32 or i32) lists each sequence's blocks in order; `seqlens_k`
/// holds the cumulative key counts. `mm_prefix_ranges` (`(batch, max_ranges, 2)` i32,
/// `[start, end)` key positions) lets the tokens of each range see each other whatever the
/// causal or window mask says. Any page size works. No backward (inference only).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (2, 4, 32), &dev)?; // one decode token per sequence
/// let cache = Tensor::randn(0f32, 1., (8, 16, 2, 32), &dev)?;
/// let table = Tensor::new(&[[3u32, 1], [7, 0]], &dev)?;
/// let (cu_q, cu_k) = (Tensor::new(&[0u32, 1, 2], &dev)?, Tensor::new(&[0u32, 20, 29], &dev)?);
/// let out = candle_fused_attn::flash_attn_varlen_paged_windowed(
///     &q, &cache, &cache, &cu_q, &cu_k, &table, None, 1, 20, 0.18, None, Some(0), 16, None,
/// )?;
/// assert_eq!(out.dims(), &[2, 4, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_paged_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    block_table: &Tensor,
    mm_prefix_ranges: Option<&Tensor>,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
    page_block_size: usize,
    softcap: Option<f32>,
) -> Result<Tensor> {
    let mut vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k).paged(block_table, page_block_size);
    vl.mm_prefix_ranges = mm_prefix_ranges.cloned();
    let mut p = AttnParams::new(softmax_scale).window(window_size_left, window_size_right);
    p.softcap = softcap;
    attention_varlen(q, k, v, &vl, &p)
}

/// Drop-in for `candle_flash_attn::flash_attn_varlen_alibi`: [`flash_attn_varlen`] with
/// ALiBi slopes (f32, `(heads)` or `(batch, heads)`).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (7, 2, 32), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 7], &dev)?;
/// let slopes = Tensor::new(&[0.5f32, 0.25], &dev)?;
/// let out = candle_fused_attn::flash_attn_varlen_alibi(&q, &q, &q, &slopes, &cu, &cu, 4, 4, 0.18, true)?;
/// assert_eq!(out.dims(), &[7, 2, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_alibi(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    causal: bool,
) -> Result<Tensor> {
    let vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k);
    attention_varlen(q, k, v, &vl, &AttnParams::new(softmax_scale).causal(causal).alibi_slopes(alibi_slopes))
}

/// Drop-in for `candle_flash_attn::flash_attn_varlen_alibi_windowed`.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (7, 2, 32), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 7], &dev)?;
/// let slopes = Tensor::new(&[0.5f32, 0.25], &dev)?;
/// let out = candle_fused_attn::flash_attn_varlen_alibi_windowed(&q, &q, &q, &slopes, &cu, &cu, 4, 4, 0.18, Some(1), None)?;
/// assert_eq!(out.dims(), &[7, 2, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_alibi_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
) -> Result<Tensor> {
    let vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k);
    let p = AttnParams::new(softmax_scale).window(window_size_left, window_size_right).alibi_slopes(alibi_slopes);
    attention_varlen(q, k, v, &vl, &p)
}

/// Drop-in for `candle_flash_attn::flash_attn_varlen_alibi_windowed_softcap`. A `softcap`
/// of 0 means none.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// let q = Tensor::randn(0f32, 1., (7, 2, 32), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 7], &dev)?;
/// let out = candle_fused_attn::flash_attn_varlen_alibi_windowed_softcap(
///     &q, &q, &q, None, &cu, &cu, 4, 4, 0.18, None, Some(0), 30.0,
/// )?;
/// assert_eq!(out.dims(), &[7, 2, 32]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_alibi_windowed_softcap(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    alibi_slopes: Option<&Tensor>,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
    softcap: f32,
) -> Result<Tensor> {
    let vl = Varlen::new(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k);
    let mut p = AttnParams::new(softmax_scale).window(window_size_left, window_size_right).softcap(softcap);
    p.alibi_slopes = alibi_slopes.cloned();
    attention_varlen(q, k, v, &vl, &p)
}

/// Drop-in for `candle_flash_attn::FlashAttn`, the dense op struct users apply themselves
/// with `q.apply_op3(&k, &v, FlashAttn { .. })`: the same five public fields, the semantics
/// of [`crate::flash_attn_alibi_windowed_softcap`], on every device, and differentiable (its
/// backward recomputes the forward's log-sum-exp, since the struct has nowhere to keep it;
/// [`attention`] keeps it and is faster to train through).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::FlashAttn;
/// # fn main() -> candle_core::Result<()> {
/// let q = Tensor::randn(0f32, 1., (1, 6, 4, 32), &Device::Cpu)?;
/// let op = FlashAttn { softmax_scale: 0.18, alibi_slopes: None, window_size_left: None, window_size_right: Some(0), softcap: None };
/// let out = q.apply_op3(&q, &q, op)?;
/// assert_eq!(out.dims(), q.dims());
/// # Ok(()) }
/// ```
pub struct FlashAttn {
    pub softmax_scale: f32,
    pub alibi_slopes: Option<Tensor>,
    pub window_size_left: Option<usize>,
    pub window_size_right: Option<usize>,
    pub softcap: Option<f32>,
}

impl FlashAttn {
    fn params(&self) -> AttnParams {
        let mut p = AttnParams::new(self.softmax_scale).window(self.window_size_left, self.window_size_right);
        p.softcap = self.softcap;
        p.alibi_slopes = self.alibi_slopes.clone();
        p
    }

    /// The validated op for these layouts: the checks [`attention`] makes, on what a
    /// `CustomOp3` sees. The head dim must be contiguous (candle-flash-attn requires it too).
    fn op(&self, dtypes: [candle_core::DType; 3], ql: &Layout, kl: &Layout, vl: &Layout) -> Result<FusedAttention> {
        let params = self.params();
        let problem = validate_dims(ql.dims(), kl.dims(), vl.dims(), dtypes, &params)?;
        crate::problem::check_dtype(dtypes[0])?;
        for (name, l) in [("q", ql), ("k", kl), ("v", vl)] {
            if l.dims()[3] > 1 && l.stride()[3] != 1 {
                candle_core::bail!(
                    "fused-attn: FlashAttn needs {name}'s last dim contiguous, got strides {:?}",
                    l.stride()
                )
            }
        }
        let alibi = match &params.alibi_slopes {
            None => None,
            Some(s) => Some(s.broadcast_as((problem.batch, problem.heads))?.contiguous()?),
        };
        Ok(FusedAttention::new(problem, alibi))
    }
}

impl CustomOp3 for FlashAttn {
    fn name(&self) -> &'static str {
        "flash-attn"
    }

    fn cpu_fwd(
        &self,
        q: &CpuStorage,
        ql: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        v: &CpuStorage,
        vl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let op = self.op([q.dtype(), k.dtype(), v.dtype()], ql, kl, vl)?;
        if op.problem.seq_k == 0 || ql.shape().elem_count() == 0 {
            return Ok((zeros_cpu(q.dtype(), ql.shape().elem_count())?, ql.shape().clone()));
        }
        op.cpu_fwd(q, ql, k, kl, v, vl)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        q: &candle_core::CudaStorage,
        ql: &Layout,
        k: &candle_core::CudaStorage,
        kl: &Layout,
        v: &candle_core::CudaStorage,
        vl: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        use candle_core::backend::BackendStorage;
        let op = self.op([q.dtype(), k.dtype(), v.dtype()], ql, kl, vl)?;
        if op.problem.seq_k == 0 || ql.shape().elem_count() == 0 {
            // At least one element: candle 0.11 cannot allocate 0 bytes on CUDA (a storage
            // larger than the shape is what a narrowed view has too).
            let n = ql.shape().elem_count().max(1);
            let zeros = candle_core::backend::BackendDevice::zeros_impl(q.device(), &Shape::from(n), q.dtype())?;
            return Ok((zeros, ql.shape().clone()));
        }
        op.cuda_fwd(q, ql, k, kl, v, vl)
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        out: &Tensor,
        grad_out: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let params = self.params();
        let (q, k, v) = (q.detach(), k.detach(), v.detach());
        let (_, lse) = attention_with_lse(&q, &k, &v, &params)?;
        let (dq, dk, dv) = attention_backward(&q, &k, &v, &out.detach(), grad_out, &lse, &params)?;
        Ok((Some(dq), Some(dk), Some(dv)))
    }
}

fn zeros_cpu(dtype: candle_core::DType, n: usize) -> Result<CpuStorage> {
    use candle_core::DType;
    Ok(match dtype {
        DType::F32 => CpuStorage::F32(crate::alloc::try_vec(n, 0.0, "the output")?),
        DType::F16 => CpuStorage::F16(crate::alloc::try_vec(n, half::f16::ZERO, "the output")?),
        DType::BF16 => CpuStorage::BF16(crate::alloc::try_vec(n, half::bf16::ZERO, "the output")?),
        dt => candle_core::bail!("fused-attn: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    })
}
