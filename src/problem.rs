//! The validated problem: what the caller asked for ([`AttnParams`]), checked once against
//! q, k and v, and normalized into the [`Problem`] that every back end and the reference
//! receive. Nothing here depends on a back end; every back end imports from here.

use candle_core::{bail, DType, Layout, Result, Tensor};

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

/// How the rows of q, k and v are laid out along the sequence. Only the dense
/// `(batch, seq, heads, head_dim)` layout exists today; packed (varlen) batches and paged KV
/// caches add variants here, and every back end matches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SeqLayout {
    #[default]
    Dense,
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
    /// The sequence layout of q, k and v.
    pub layout: SeqLayout,
    /// Whether the caller wants the per-row log-sum-exp beside the output.
    pub want_lse: bool,
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

fn dims4(t: &Tensor, name: &str) -> Result<(usize, usize, usize, usize)> {
    match t.dims() {
        &[b, s, h, d] => Ok((b, s, h, d)),
        dims => bail!(
            "fused-attn: {name} must have rank 4 (batch, seq, heads, head_dim), got rank {} with shape {dims:?}",
            dims.len()
        ),
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
/// problem. Every error names the problem and the values. Shared with [`crate::attention_ref`],
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
        bail!("fused-attn: dtypes differ: q is {:?}, k is {:?}, v is {:?}", dt, k.dtype(), v.dtype())
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
            bail!("fused-attn: alibi_slopes must have shape ({h}) or ({b}, {h}), got {:?}", s.dims())
        }
        if !s.device().same_device(q.device()) {
            bail!("fused-attn: alibi_slopes are on {:?} but q is on {:?}", s.device().location(), q.device().location())
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
        layout: SeqLayout::Dense,
        want_lse: false,
    })
}

/// Makes the head dim contiguous (a copy) only when it is not; other strides are kept.
pub(crate) fn head_dim_contiguous(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    if l.dims()[3] <= 1 || l.stride()[3] == 1 {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}
