//! Fused (FlashAttention-style) attention for candle, on the CPU and on CUDA.
//!
//! One op, [`attention`], computes `softmax(scale · q kᵀ + bias) v` without ever
//! materialising the `Sq×Sk` score matrix. The functions [`flash_attn`],
//! [`flash_attn_windowed`], [`flash_attn_alibi`], [`flash_attn_alibi_windowed`] and
//! [`flash_attn_alibi_windowed_softcap`] have the names, signatures and semantics of
//! `candle-flash-attn` 0.11, so switching crates is one `use` line, and they run on
//! every device.
//!
//! # Semantics
//! * **Layout.** `q` is `(batch, seq_q, heads, head_dim)`; `k` and `v` are
//!   `(batch, seq_k, kv_heads, head_dim)` with `heads % kv_heads == 0` (GQA/MQA):
//!   q head `i` reads kv head `i / (heads / kv_heads)`. No K/V copies are made.
//!   The output has q's shape and dtype.
//! * **Scores.** `s = softmax_scale · <q_i, k_j>`; with a softcap `c`,
//!   `s = c · tanh(s / c)`; with ALiBi, `s += -slope_h · |i + sk - sq - j|`.
//! * **Masks align bottom-right.** With `diag(i) = i + sk - sq`: causal keeps
//!   `j <= diag(i)`, `window_size_left = Some(l)` keeps `j >= diag(i) - l`,
//!   `window_size_right = Some(r)` keeps `j <= diag(i) + r`. A KV-cache decoding step
//!   (`sq < sk`) is therefore just a call.
//! * **A row with no visible key outputs zeros**, not NaN.
//! * **Softmax runs in f32** with f32 accumulation for every input dtype (f32, f16, bf16).
//! * **Strided inputs** (views from `narrow`, `transpose`, `i`) are read in place through
//!   their strides as long as the head dimension is contiguous; otherwise they are copied
//!   once to a contiguous buffer.
//! * **NaN** in a query row reaches only that row's output; NaN in a key reaches only
//!   the rows that see that key.
//!
//! # Example
//! ```
//! use candle_core::{Device, DType, Tensor};
//! # fn main() -> candle_core::Result<()> {
//! let dev = Device::Cpu;
//! // batch 1, 7 queries, 8 heads; a KV cache of 19 positions with 2 kv heads (GQA 4:1).
//! let q = Tensor::randn(0f32, 1., (1, 7, 8, 64), &dev)?;
//! let k = Tensor::randn(0f32, 1., (1, 19, 2, 64), &dev)?;
//! let v = Tensor::randn(0f32, 1., (1, 19, 2, 64), &dev)?;
//! let scale = 1.0 / (64f32).sqrt();
//! let out = candle_fused_attn::flash_attn(&q, &k, &v, scale, true)?;
//! assert_eq!(out.dims(), &[1, 7, 8, 64]);
//!
//! // The same call through the reference path agrees.
//! let params = candle_fused_attn::AttnParams::new(scale).causal(true);
//! let reference = candle_fused_attn::attention_ref(&q, &k, &v, &params)?;
//! let err = (out - reference)?.abs()?.max_all()?.to_scalar::<f32>()?;
//! assert!(err < 1e-4);
//! # Ok(()) }
//! ```

use candle_core::{bail, CpuStorage, DType, Layout, Result, Shape, Tensor};

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;

pub use reference::attention_ref;

/// The largest head dimension any back end supports.
pub const MAX_HEAD_DIM: usize = 256;

/// Everything [`attention`] needs besides q, k and v.
///
/// ```
/// # use candle_fused_attn::AttnParams;
/// let p = AttnParams::new(0.125).causal(true).window(Some(256), Some(0)).softcap(30.0);
/// assert!(p.causal);
/// ```
#[derive(Debug, Clone)]
pub struct AttnParams {
    /// Multiplies `<q, k>`; usually `1 / sqrt(head_dim)`.
    pub softmax_scale: f32,
    /// Bottom-right causal mask; the same as `window_size_right = Some(0)`.
    pub causal: bool,
    /// Keys further than this to the left of the diagonal are masked; `None` = unbounded.
    pub window_size_left: Option<usize>,
    /// Keys further than this to the right of the diagonal are masked; `None` = unbounded.
    pub window_size_right: Option<usize>,
    /// `s = c · tanh(s / c)` when `Some(c)` with `c > 0`.
    pub softcap: Option<f32>,
    /// f32 ALiBi slopes of shape `(heads)` or `(batch, heads)`.
    pub alibi_slopes: Option<Tensor>,
}

impl AttnParams {
    /// No mask, no softcap, no ALiBi.
    pub fn new(softmax_scale: f32) -> Self {
        Self {
            softmax_scale,
            causal: false,
            window_size_left: None,
            window_size_right: None,
            softcap: None,
            alibi_slopes: None,
        }
    }
    pub fn causal(mut self, causal: bool) -> Self {
        self.causal = causal;
        self
    }
    pub fn window(mut self, left: Option<usize>, right: Option<usize>) -> Self {
        self.window_size_left = left;
        self.window_size_right = right;
        self
    }
    pub fn softcap(mut self, softcap: f32) -> Self {
        self.softcap = Some(softcap);
        self
    }
    pub fn alibi_slopes(mut self, slopes: &Tensor) -> Self {
        self.alibi_slopes = Some(slopes.clone());
        self
    }
}

/// The validated problem that every back end receives. Windows use `-1` for "unbounded",
/// as the CUDA params struct does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Problem {
    pub batch: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub scale: f32,
    /// 0 when off.
    pub softcap: f32,
    pub window_left: i64,
    pub window_right: i64,
    pub has_alibi: bool,
}

impl Problem {
    /// `diag(i) = i + sk - sq`, the key column aligned with query row `i`.
    #[inline]
    pub fn diag(&self, i: usize) -> i64 {
        i as i64 + self.seq_k as i64 - self.seq_q as i64
    }

    /// The half-open range of keys row `i` may see, clamped to `[0, sk)`; empty when none.
    #[inline]
    pub fn key_range(&self, i: usize) -> (usize, usize) {
        let d = self.diag(i);
        let lo = if self.window_left < 0 { 0 } else { (d - self.window_left).max(0) };
        let hi = if self.window_right < 0 {
            self.seq_k as i64
        } else {
            (d + self.window_right + 1).clamp(0, self.seq_k as i64)
        };
        let lo = lo.min(self.seq_k as i64);
        (lo as usize, (hi.max(lo)) as usize)
    }

    pub fn group_size(&self) -> usize {
        self.heads / self.kv_heads
    }
}

/// Element strides of a `(batch, seq, heads, head_dim)` tensor whose head dim is contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Strides {
    pub offset: usize,
    pub batch: usize,
    pub seq: usize,
    pub head: usize,
}

impl Strides {
    pub fn from_layout(l: &Layout) -> Result<Self> {
        let s = l.stride();
        if s.len() != 4 || (l.dims()[3] > 1 && s[3] != 1) {
            bail!("fused-attn internal: expected a rank-4 layout with contiguous head dim, got strides {s:?}")
        }
        Ok(Self { offset: l.start_offset(), batch: s[0], seq: s[1], head: s[2] })
    }
}

/// The fused attention op. Applied through [`attention`], which validates first.
struct FusedAttention {
    problem: Problem,
    /// `(batch, heads)` f32, contiguous, on q's device.
    alibi: Option<Tensor>,
}

impl candle_core::CustomOp3 for FusedAttention {
    fn name(&self) -> &'static str {
        "fused-attention"
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
        let alibi = match &self.alibi {
            None => None,
            Some(t) => Some(t.flatten_all()?.to_vec1::<f32>()?),
        };
        let out = cpu::forward(&self.problem, (q, ql), (k, kl), (v, vl), alibi.as_deref())?;
        Ok((out, ql.shape().clone()))
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
        let out = cuda::forward(&self.problem, (q, ql), (k, kl), (v, vl), self.alibi.as_ref())?;
        Ok((out, ql.shape().clone()))
    }
}

fn dims4(t: &Tensor, name: &str) -> Result<(usize, usize, usize, usize)> {
    match t.dims() {
        &[b, s, h, d] => Ok((b, s, h, d)),
        dims => bail!(
            "fused-attn: {name} must have rank 4 (batch, seq, heads, head_dim), got rank {} with shape {dims:?}",
            dims.len()
        ),
    }
}

/// Makes the head dim contiguous (a copy) only when it is not; other strides are kept.
fn head_dim_contiguous(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    if l.dims()[3] <= 1 || l.stride()[3] == 1 {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}

fn window_to_i64(w: Option<usize>, name: &str) -> Result<i64> {
    match w {
        None => Ok(-1),
        Some(w) if w <= i32::MAX as usize => Ok(w as i64),
        Some(w) => bail!("fused-attn: {name} = {w} is larger than the supported maximum {}", i32::MAX),
    }
}

/// Checks what the fused op needs on top of [`validate_shapes_and_params`]: a supported dtype.
pub(crate) fn validate(q: &Tensor, k: &Tensor, v: &Tensor, p: &AttnParams) -> Result<Problem> {
    let problem = validate_shapes_and_params(q, k, v, p)?;
    let dt = q.dtype();
    if !matches!(dt, DType::F32 | DType::F16 | DType::BF16) {
        bail!("fused-attn: unsupported dtype {dt:?}; supported: f32, f16, bf16")
    }
    Ok(problem)
}

/// Checks ranks, shapes, dtype agreement, devices and parameters, and returns the normalized
/// problem. Every error names the problem and the values. Shared with [`attention_ref`],
/// which also accepts f64.
pub(crate) fn validate_shapes_and_params(q: &Tensor, k: &Tensor, v: &Tensor, p: &AttnParams) -> Result<Problem> {
    let (b, sq, h, d) = dims4(q, "q")?;
    let (bk, sk, hk, dk) = dims4(k, "k")?;
    let (bv, sv, hv, dv) = dims4(v, "v")?;
    if d != dk || d != dv {
        bail!("fused-attn: head_dim differs between q ({d}), k ({dk}) and v ({dv})")
    }
    if b != bk || b != bv {
        bail!("fused-attn: batch differs between q ({b}), k ({bk}) and v ({bv})")
    }
    if sk != sv {
        bail!("fused-attn: k and v sequence lengths differ: k has {sk}, v has {sv}")
    }
    if hk != hv {
        bail!("fused-attn: k and v head counts differ: k has {hk}, v has {hv}")
    }
    if hk == 0 && h > 0 {
        bail!("fused-attn: k/v have 0 heads but q has {h}")
    }
    if hk > 0 && h % hk != 0 {
        bail!("fused-attn: kv heads ({hk}) must divide q heads ({h}) for GQA/MQA")
    }
    if d > MAX_HEAD_DIM {
        bail!("fused-attn: head_dim {d} is above the supported maximum {MAX_HEAD_DIM}")
    }
    let dt = q.dtype();
    if k.dtype() != dt || v.dtype() != dt {
        bail!(
            "fused-attn: dtypes differ: q is {:?}, k is {:?}, v is {:?}",
            dt,
            k.dtype(),
            v.dtype()
        )
    }
    if !q.device().same_device(k.device()) || !q.device().same_device(v.device()) {
        bail!(
            "fused-attn: q, k and v must be on one device: q on {:?}, k on {:?}, v on {:?}",
            q.device().location(),
            k.device().location(),
            v.device().location()
        )
    }
    if !p.softmax_scale.is_finite() {
        bail!("fused-attn: softmax_scale must be finite, got {}", p.softmax_scale)
    }
    let softcap = match p.softcap {
        None | Some(0.0) => 0.0,
        Some(c) if c > 0.0 && c.is_finite() => c,
        Some(c) => bail!("fused-attn: softcap must be a finite value > 0 (or 0 for none), got {c}"),
    };
    let mut window_left = window_to_i64(p.window_size_left, "window_size_left")?;
    let mut window_right = window_to_i64(p.window_size_right, "window_size_right")?;
    if p.causal {
        if let Some(r) = p.window_size_right.filter(|&r| r > 0) {
            bail!("fused-attn: causal=true contradicts window_size_right = Some({r}); causal means Some(0)")
        }
        window_right = 0;
    }
    // A window that reaches past every key is no window: row i sees j >= diag(i) - l for
    // all j once l >= sk - 1, and j <= diag(i) + r for all j once r >= sq - 1. Normalizing
    // keeps the kernels on their unmasked fast path (a causal decode step, sq = 1, is one).
    if window_left >= 0 && window_left >= sk as i64 - 1 {
        window_left = -1;
    }
    if window_right >= 0 && window_right >= sq as i64 - 1 {
        window_right = -1;
    }
    if let Some(s) = &p.alibi_slopes {
        if s.dtype() != DType::F32 {
            bail!("fused-attn: alibi_slopes must be f32, got {:?}", s.dtype())
        }
        let ok = matches!(s.dims(), [hh] if *hh == h) || matches!(s.dims(), [bb, hh] if *bb == b && *hh == h);
        if !ok {
            bail!(
                "fused-attn: alibi_slopes must have shape ({h}) or ({b}, {h}), got {:?}",
                s.dims()
            )
        }
        if !s.device().same_device(q.device()) {
            bail!(
                "fused-attn: alibi_slopes are on {:?} but q is on {:?}",
                s.device().location(),
                q.device().location()
            )
        }
    }
    Ok(Problem {
        batch: b,
        seq_q: sq,
        seq_k: sk,
        heads: h,
        kv_heads: hk,
        head_dim: d,
        scale: p.softmax_scale,
        softcap,
        window_left,
        window_right,
        has_alibi: p.alibi_slopes.is_some(),
    })
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
    let p = AttnParams::new(softmax_scale)
        .window(window_size_left, window_size_right)
        .alibi_slopes(alibi_slopes);
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
