//! The validated problem: what the caller asked for ([`AttnParams`]), checked once against
//! q, k and v, and normalized into the [`Problem`] that every back end and the reference
//! receive. Nothing here depends on a back end; every back end imports from here.

use std::sync::Arc;

use candle_core::{bail, DType, Layout, Result, Tensor};

/// The largest head dimension any back end supports.
pub const MAX_HEAD_DIM: usize = 512;

/// Everything [`crate::attention`] needs besides q, k and v.
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

/// How the rows of q, k and v are laid out along the sequence; every back end matches on it.
#[derive(Debug, Clone, Default)]
pub(crate) enum SeqLayout {
    /// q `(batch, seq_q, heads, head_dim)`, k and v `(batch, seq_k, kv_heads, head_dim)`.
    #[default]
    Dense,
    /// A packed (varlen) batch, its K/V optionally paged: see [`Packed`]. The problem's
    /// `batch` is the number of sequences, `seq_q`/`seq_k` the caller's `max_seqlen_q/k`.
    Packed(Arc<Packed>),
}

impl PartialEq for SeqLayout {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SeqLayout::Dense, SeqLayout::Dense) => true,
            (SeqLayout::Packed(a), SeqLayout::Packed(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A validated packed batch (built by `packed.rs` from a [`crate::Varlen`]): host copies of
/// the index tensors, every entry checked, and their i32 copies on q's device for kernels.
///
/// q is `(total_q, heads, head_dim)`; sequence `b` owns q rows `cu_q[b]..cu_q[b+1]`. Without
/// pages k and v are `(total_k, kv_heads, head_dim)` and sequence `b` owns k/v rows
/// `cu_k[b]..cu_k[b+1]`; with [`Pages`] k and v are `(num_blocks, page_size, kv_heads,
/// head_dim)` and key `j` of sequence `b` is row `j % page_size` of block
/// `table[b · max_blocks + j / page_size]`. Masks align bottom-right per sequence.
#[derive(Debug)]
pub(crate) struct Packed {
    /// `batch + 1` cumulative query counts, starting at 0 and ending at `total_q`.
    pub cu_q: Vec<usize>,
    /// `batch + 1` cumulative key counts, starting at 0 (ending at `total_k` without pages).
    pub cu_k: Vec<usize>,
    pub pages: Option<Pages>,
    /// `(batch, max_ranges)` multimodal prefix ranges `[start, end)` in key positions of
    /// their sequence, `0 <= start <= end <= len_k` (`start == end`: none); empty if none.
    pub ranges: Vec<[i32; 2]>,
    pub max_ranges: usize,
    /// The index tensors as contiguous i32 on q's device, copies of the checked host values
    /// (read by the CUDA kernels; the CPU back end reads the host copies above).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub device: PackedTensors,
}

/// The block table of a paged KV cache.
#[derive(Debug)]
pub(crate) struct Pages {
    /// `(batch, max_blocks)` block indices; those a sequence uses are `< num_blocks`.
    pub table: Vec<u32>,
    pub max_blocks: usize,
    /// Keys per block.
    pub page_size: usize,
    pub num_blocks: usize,
}

/// [`Packed`]'s index arrays on q's device, i32, contiguous.
#[derive(Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) struct PackedTensors {
    /// `(batch + 1)`.
    pub cu_q: Tensor,
    /// `(batch + 1)`.
    pub cu_k: Tensor,
    /// `(batch, max_blocks)` when paged.
    pub block_table: Option<Tensor>,
    /// `(batch, max_ranges, 2)` when there are ranges.
    pub ranges: Option<Tensor>,
}

impl Packed {
    pub fn batch(&self) -> usize {
        self.cu_q.len() - 1
    }
    pub fn total_q(&self) -> usize {
        self.cu_q[self.batch()]
    }
    pub fn len_q(&self, b: usize) -> usize {
        self.cu_q[b + 1] - self.cu_q[b]
    }
    pub fn len_k(&self, b: usize) -> usize {
        self.cu_k[b + 1] - self.cu_k[b]
    }
    /// Sequence `b`'s ranges (empty ones included).
    pub fn ranges_of(&self, b: usize) -> &[[i32; 2]] {
        if self.max_ranges == 0 {
            &[]
        } else {
            &self.ranges[b * self.max_ranges..][..self.max_ranges]
        }
    }
}

/// The validated problem that every back end receives. Windows use `-1` for "unbounded",
/// as the CUDA params struct does.
#[derive(Debug, Clone, PartialEq)]
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
    /// Multimodal prefix ranges `[start, end)` of a one-sequence problem (see
    /// [`Problem::sequence`]), in key positions: a query whose position `diag(i)` lies in a
    /// range sees every key of that range, whatever the window says. `None`: none.
    pub mm_ranges: Option<Arc<[[i32; 2]]>>,
}

impl Problem {
    /// `diag(i) = i + sk - sq`, the key column aligned with query row `i`.
    #[inline]
    pub fn diag(&self, i: usize) -> i64 {
        i as i64 + self.seq_k as i64 - self.seq_q as i64
    }

    /// The half-open range of keys row `i` may see, clamped to `[0, sk)`; empty when none.
    ///
    /// The window's keys, joined with every multimodal prefix range that holds `diag(i)`.
    /// Both contain `diag(i)` whenever it is a key, so the union is again one range.
    #[inline]
    pub fn key_range(&self, i: usize) -> (usize, usize) {
        let d = self.diag(i);
        let lo = if self.window_left < 0 { 0 } else { (d - self.window_left).max(0) };
        let hi = if self.window_right < 0 {
            self.seq_k as i64
        } else {
            (d + self.window_right + 1).clamp(0, self.seq_k as i64)
        };
        let mut lo = lo.min(self.seq_k as i64);
        let mut hi = hi.max(lo);
        if let Some(ranges) = &self.mm_ranges {
            for &[s, e] in ranges.iter() {
                let (s, e) = (s as i64, e as i64);
                if s <= d && d < e {
                    if lo == hi {
                        (lo, hi) = (s, e);
                    } else {
                        (lo, hi) = (lo.min(s), hi.max(e));
                    }
                }
            }
        }
        (lo as usize, hi as usize)
    }

    /// Whether any row's visible keys are not just its window's (multimodal ranges).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub fn has_mm_ranges(&self) -> bool {
        self.mm_ranges.as_ref().is_some_and(|r| r.iter().any(|&[s, e]| s < e))
    }

    /// The packed batch, when the layout is packed.
    pub fn packed(&self) -> Option<&Arc<Packed>> {
        match &self.layout {
            SeqLayout::Dense => None,
            SeqLayout::Packed(p) => Some(p),
        }
    }

    /// Sequence `b` of a packed problem as a dense problem of batch 1: its own lengths, its
    /// windows normalized for them as [`validate`] normalizes a dense call's, and its own
    /// multimodal ranges. The same problem a dense call on the sequence sliced out gets.
    pub fn sequence(&self, b: usize) -> Problem {
        let Some(packed) = self.packed() else { return self.clone() };
        let (sq, sk) = (packed.len_q(b), packed.len_k(b));
        let ranges = packed.ranges_of(b);
        let (window_left, window_right) = normalize_windows(self.window_left, self.window_right, sq, sk);
        Problem {
            batch: 1,
            seq_q: sq,
            seq_k: sk,
            window_left,
            window_right,
            layout: SeqLayout::Dense,
            mm_ranges: ranges.iter().any(|&[s, e]| s < e).then(|| ranges.into()),
            ..self.clone()
        }
    }

    /// Rows of the per-row log-sum-exp: `(batch, heads, seq_q)` dense, `(heads, total_q)`
    /// packed.
    pub fn lse_shape(&self) -> Vec<usize> {
        match self.packed() {
            None => vec![self.batch, self.heads, self.seq_q],
            Some(p) => vec![self.heads, p.total_q()],
        }
    }

    /// q heads per kv head (1 for a problem without heads).
    pub fn group_size(&self) -> usize {
        self.heads / self.kv_heads.max(1)
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

fn dims4(dims: &[usize], name: &str) -> Result<(usize, usize, usize, usize)> {
    match dims {
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
    check_dtype(q.dtype())?;
    Ok(problem)
}

/// The dtypes attention is defined for here (the reference also takes f64).
pub(crate) fn check_float(dt: DType) -> Result<()> {
    if !matches!(dt, DType::F64 | DType::F32 | DType::F16 | DType::BF16) {
        bail!("fused-attn: unsupported dtype {dt:?}; supported: f32, f16, bf16 (and f64 for the reference)")
    }
    Ok(())
}

/// The dtypes the fused op runs.
pub(crate) fn check_dtype(dt: DType) -> Result<()> {
    if !matches!(dt, DType::F32 | DType::F16 | DType::BF16) {
        bail!("fused-attn: unsupported dtype {dt:?}; supported: f32, f16, bf16")
    }
    Ok(())
}

/// Checks ranks, shapes, dtype agreement, devices and parameters, and returns the normalized
/// problem. Every error names the problem and the values. Shared with [`crate::attention_ref`],
/// which also accepts f64.
pub(crate) fn validate_shapes_and_params(q: &Tensor, k: &Tensor, v: &Tensor, p: &AttnParams) -> Result<Problem> {
    let problem = validate_dims(q.dims(), k.dims(), v.dims(), [q.dtype(), k.dtype(), v.dtype()], p)?;
    check_float(q.dtype())?;
    same_device(q, &[("k", k), ("v", v)])?;
    if let Some(s) = &p.alibi_slopes {
        same_device(q, &[("alibi_slopes", s)])?;
    }
    Ok(problem)
}

/// An error unless every tensor of `others` is on q's device.
pub(crate) fn same_device(q: &Tensor, others: &[(&str, &Tensor)]) -> Result<()> {
    for (name, t) in others {
        if !q.device().same_device(t.device()) {
            bail!(
                "fused-attn: q, k, v and their side inputs must be on one device: q is on {:?}, {name} on {:?}",
                q.device().location(),
                t.device().location()
            )
        }
    }
    Ok(())
}

/// [`validate_shapes_and_params`] without the device checks: the dense problem of q, k and
/// v of these dims and dtypes (what a `CustomOp3` sees, which has layouts, not tensors).
pub(crate) fn validate_dims(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    dtypes: [DType; 3],
    p: &AttnParams,
) -> Result<Problem> {
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
    let [dt, dtk, dtv] = dtypes;
    if dtk != dt || dtv != dt {
        bail!("fused-attn: dtypes differ: q is {dt:?}, k is {dtk:?}, v is {dtv:?}")
    }
    check_elements("q", q)?;
    check_elements("k", k)?;
    // The LSE, (batch, heads, seq_q) f32, exists even when head_dim is 0.
    check_elements("the LSE", &[b, h, sq])?;
    problem_from_params(p, (b, sq, sk, h, hk, d))
}

/// An error unless a tensor of these dims has an element count that fits `usize` and a size
/// (at 8 bytes an element, the largest dtype the crate reads) that fits `isize`: a broadcast
/// view can claim 2^64 elements of one stored value, whose count wraps to 0 in `usize`.
pub(crate) fn check_elements(name: &str, dims: &[usize]) -> Result<()> {
    let fits = dims
        .iter()
        .try_fold(1usize, |n, &x| n.checked_mul(x))
        .filter(|n| n.checked_mul(8).is_some_and(|b| b <= isize::MAX as usize));
    if fits.is_none() {
        bail!("fused-attn: {name} of shape {dims:?} has more elements than memory can hold")
    }
    Ok(())
}

/// The checks every layout shares, on the problem's sizes `(batch, seq_q, seq_k, heads,
/// kv_heads, head_dim)`: head counts (GQA), the head dim, scale, softcap, windows (the
/// causal flag folded in, normalized for `seq_q`/`seq_k`) and the ALiBi slopes' dtype and
/// shape. Returns the dense problem of those sizes.
pub(crate) fn problem_from_params(
    p: &AttnParams,
    (b, sq, sk, h, hk, d): (usize, usize, usize, usize, usize, usize),
) -> Result<Problem> {
    if hk == 0 && h > 0 {
        bail!("fused-attn: k/v have 0 heads but q has {h}")
    }
    if hk > 0 && h % hk != 0 {
        bail!("fused-attn: kv heads ({hk}) must divide q heads ({h}) for GQA/MQA")
    }
    if d > MAX_HEAD_DIM {
        bail!("fused-attn: head_dim {d} is above the supported maximum {MAX_HEAD_DIM}")
    }
    if !p.softmax_scale.is_finite() {
        bail!("fused-attn: softmax_scale must be finite, got {}", p.softmax_scale)
    }
    let softcap = match p.softcap {
        None | Some(0.0) => 0.0,
        Some(c) if c > 0.0 && c.is_finite() => c,
        Some(c) => bail!("fused-attn: softcap must be a finite value > 0 (or 0 for none), got {c}"),
    };
    // The kernels fold the constants into f32 factors: scale·log2(e) without a softcap,
    // scale / c and c·log2(e) with one. Each must be finite, or every score comes out NaN
    // (inf·0) where the definition is finite.
    let log2e = std::f32::consts::LOG2_E;
    if softcap > 0.0 {
        let ratio = p.softmax_scale / softcap;
        if softcap < f32::MIN_POSITIVE || !ratio.is_finite() || !(softcap * log2e).is_finite() {
            bail!(
                "fused-attn: softcap {softcap:e} with softmax_scale {:e} is outside f32's range: scale / softcap = {ratio:e}, softcap·log2(e) = {:e} (softcap must be a normal f32, at most {:e})",
                p.softmax_scale,
                softcap * log2e,
                f32::MAX / log2e
            )
        }
    } else if !(p.softmax_scale * log2e).is_finite() {
        bail!(
            "fused-attn: softmax_scale {:e} is outside f32's range once multiplied by log2(e) (at most {:e} in magnitude)",
            p.softmax_scale,
            f32::MAX / log2e
        )
    }
    let window_left = window_to_i64(p.window_size_left, "window_size_left")?;
    let mut window_right = window_to_i64(p.window_size_right, "window_size_right")?;
    if p.causal {
        if let Some(r) = p.window_size_right.filter(|&r| r > 0) {
            bail!("fused-attn: causal=true contradicts window_size_right = Some({r}); causal means Some(0)")
        }
        window_right = 0;
    }
    let (window_left, window_right) = normalize_windows(window_left, window_right, sq, sk);
    if let Some(s) = &p.alibi_slopes {
        if s.dtype() != DType::F32 {
            bail!("fused-attn: alibi_slopes must be f32, got {:?}", s.dtype())
        }
        let ok = matches!(s.dims(), [hh] if *hh == h) || matches!(s.dims(), [bb, hh] if *bb == b && *hh == h);
        if !ok {
            bail!("fused-attn: alibi_slopes must have shape ({h}) or ({b}, {h}), got {:?}", s.dims())
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
        mm_ranges: None,
    })
}

/// A window that reaches past every key is no window: row i sees j >= diag(i) - l for all
/// j once l >= sk - 1, and j <= diag(i) + r for all j once r >= sq - 1. Normalizing keeps
/// the kernels on their unmasked fast path (a causal decode step, sq = 1, is one).
pub(crate) fn normalize_windows(mut left: i64, mut right: i64, sq: usize, sk: usize) -> (i64, i64) {
    if left >= 0 && left >= sk as i64 - 1 {
        left = -1;
    }
    if right >= 0 && right >= sq as i64 - 1 {
        right = -1;
    }
    (left, right)
}

/// Makes the head dim contiguous (a copy) only when it is not; other strides are kept.
pub(crate) fn head_dim_contiguous(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    let last = l.dims().len() - 1;
    if l.dims()[last] <= 1 || l.stride()[last] == 1 {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}
