//! Packed (varlen) batches and paged KV caches: the public description [`Varlen`], and its
//! validation into the [`Problem`] (layout [`SeqLayout::Packed`]) that the back ends get.
//!
//! Every index tensor is read to the host once per call and every entry is checked before
//! any kernel runs; the kernels then read i32 copies of the checked values, uploaded to q's
//! device, never the caller's tensors. Index tensors may live on the CPU or on q's device;
//! device-resident ones are read together with one wait by the back end before the checks
//! (`crate::op::read_indices`: on a device of its own stream on a side stream that waits only
//! for the work that wrote them, on candle's default device on its stream, src/cuda/indices.rs);
//! host-resident ones spare even that copy. The upload of the
//! checked values is reused while they stay the same (the layers of one decode step), see
//! [`uploaded`].

use std::sync::{Arc, Mutex};

use candle_core::{bail, DType, Device, Result, Tensor};

use crate::problem::{
    check_dtype, check_elements, check_float, problem_from_params, same_device, AttnParams, Packed, PackedTensors,
    Pages, Problem, SeqLayout,
};

/// How the rows of a packed batch are laid out: the varlen (and paged) part of
/// candle-flash-attn's `flash_attn_varlen*` arguments, for [`crate::attention_varlen`].
///
/// q is `(total_q, heads, head_dim)`; k and v are `(total_k, kv_heads, head_dim)`, or, with
/// a block table, a paged cache `(num_blocks, page_block_size, kv_heads, head_dim)`.
/// Sequence `b` owns q rows `seqlens_q[b]..seqlens_q[b+1]` and, unpaged, k/v rows
/// `seqlens_k[b]..seqlens_k[b+1]`; paged, its `seqlens_k[b+1] - seqlens_k[b]` keys lie in
/// the blocks `block_table[b, 0..]`, `page_block_size` keys per block, in order. Masks
/// (causal, windows, ALiBi distances) align bottom-right within each sequence.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_fused_attn::{attention_varlen, AttnParams, Varlen};
/// # fn main() -> candle_core::Result<()> {
/// let dev = Device::Cpu;
/// // Two sequences of 3 and 5 tokens, packed: 8 rows, 4 q heads, 2 kv heads.
/// let q = Tensor::randn(0f32, 1., (8, 4, 16), &dev)?;
/// let kv = Tensor::randn(0f32, 1., (8, 2, 16), &dev)?;
/// let cu = Tensor::new(&[0u32, 3, 8], &dev)?;
/// let out = attention_varlen(&q, &kv, &kv, &Varlen::new(&cu, &cu, 5, 5), &AttnParams::new(0.25).causal(true))?;
/// assert_eq!(out.dims(), &[8, 4, 16]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Varlen {
    /// `(batch + 1)` cumulative query counts, u32 or i32, starting at 0 and ending at
    /// `total_q`.
    pub seqlens_q: Tensor,
    /// `(batch + 1)` cumulative key counts, u32 or i32, starting at 0; unpaged, ending at
    /// `total_k`.
    pub seqlens_k: Tensor,
    /// At least the longest query sequence.
    pub max_seqlen_q: usize,
    /// At least the longest key sequence.
    pub max_seqlen_k: usize,
    /// Paged K/V: `(batch, max_blocks)` u32 or i32 block indices into k and v's first dim.
    pub block_table: Option<Tensor>,
    /// Keys per block of a paged cache: k's second dim (rank 4), or the block size that
    /// divides k's first dim (rank 3, `(num_blocks · page_block_size, kv_heads, head_dim)`).
    pub page_block_size: Option<usize>,
    /// `(batch, max_ranges, 2)` i32 `[start, end)` multimodal prefix ranges, in key
    /// positions of their sequence: a query at key position `p` (its row `i` plus
    /// `len_k - len_q`) inside a range sees every key of that range, whatever the causal or
    /// window mask says (image tokens attending bidirectionally inside a causal mask).
    /// `start == end` is no range.
    pub mm_prefix_ranges: Option<Tensor>,
}

impl Varlen {
    /// A packed batch without pages or ranges.
    pub fn new(seqlens_q: &Tensor, seqlens_k: &Tensor, max_seqlen_q: usize, max_seqlen_k: usize) -> Self {
        Self {
            seqlens_q: seqlens_q.clone(),
            seqlens_k: seqlens_k.clone(),
            max_seqlen_q,
            max_seqlen_k,
            block_table: None,
            page_block_size: None,
            mm_prefix_ranges: None,
        }
    }

    /// K and V are a paged cache read through `block_table` (`(batch, max_blocks)`).
    pub fn paged(mut self, block_table: &Tensor, page_block_size: usize) -> Self {
        self.block_table = Some(block_table.clone());
        self.page_block_size = Some(page_block_size);
        self
    }

    /// Multimodal prefix ranges, `(batch, max_ranges, 2)` i32.
    pub fn mm_prefix_ranges(mut self, ranges: &Tensor) -> Self {
        self.mm_prefix_ranges = Some(ranges.clone());
        self
    }
}

/// Index values already on the host, by tensor: a call's GPU-resident index tensors, read
/// together before the checks by the back end (`crate::op::read_indices`, src/cuda/indices.rs).
#[derive(Default)]
pub(crate) struct Prefetched(Vec<(candle_core::TensorId, Vec<i64>)>);

impl Prefetched {
    /// Values read for these tensors (by id).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn new(read: Vec<(candle_core::TensorId, Vec<i64>)>) -> Self {
        Self(read)
    }

    /// The values read for each of `ts`, in order, when every one was read.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn values_of(&self, ts: &[&Tensor]) -> Option<Vec<Vec<i64>>> {
        ts.iter().map(|t| self.0.iter().find(|(id, _)| *id == t.id()).map(|(_, v)| v.clone())).collect()
    }

    fn take(&mut self, t: &Tensor) -> Option<Vec<i64>> {
        let at = self.0.iter().position(|(id, _)| *id == t.id())?;
        Some(self.0.swap_remove(at).1)
    }
}

impl Varlen {
    /// The index tensors a call reads, each once (self-attention passes one tensor as both
    /// cumulative lengths).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn index_tensors(&self) -> Vec<&Tensor> {
        let mut ts = vec![&self.seqlens_q];
        if self.seqlens_k.id() != self.seqlens_q.id() {
            ts.push(&self.seqlens_k);
        }
        ts.extend(self.block_table.as_ref());
        ts.extend(self.mm_prefix_ranges.as_ref());
        ts
    }
}

/// An index tensor's values on the host as i64, with its dtype checked (u32 or i32): from
/// `pre` where they were read already, else read here (on a GPU, a copy on candle's stream).
fn host_indices(t: &Tensor, name: &str, dtypes: &[DType], pre: &mut Prefetched) -> Result<Vec<i64>> {
    if !dtypes.contains(&t.dtype()) {
        bail!("fused-attn: {name} must be {}, got {:?}", dtype_list(dtypes), t.dtype())
    }
    if let Some(vals) = pre.take(t) {
        return Ok(vals);
    }
    let flat = t.flatten_all()?.to_device(&Device::Cpu)?;
    Ok(match t.dtype() {
        DType::U32 => flat.to_vec1::<u32>()?.into_iter().map(i64::from).collect(),
        DType::I32 => flat.to_vec1::<i32>()?.into_iter().map(i64::from).collect(),
        DType::I64 => flat.to_vec1::<i64>()?,
        dt => bail!("fused-attn: {name} must be {}, got {dt:?}", dtype_list(dtypes)),
    })
}

fn dtype_list(dtypes: &[DType]) -> String {
    dtypes.iter().map(|d| format!("{d:?}").to_lowercase()).collect::<Vec<_>>().join(" or ")
}

/// Checks that an index tensor is on the CPU or on q's device.
fn index_device(q: &Tensor, t: &Tensor, name: &str) -> Result<()> {
    if t.device().is_cpu() || t.device().same_device(q.device()) {
        Ok(())
    } else {
        bail!(
            "fused-attn: {name} must be on the CPU or on q's device {:?}, got {:?}",
            q.device().location(),
            t.device().location()
        )
    }
}

/// Cumulative lengths: `batch + 1` entries from 0, non-decreasing, ending at `total`
/// (when given); returns them as usize.
fn cumulative(vals: &[i64], name: &str, total: Option<(usize, &str)>) -> Result<Vec<usize>> {
    if vals.is_empty() {
        bail!("fused-attn: {name} must have batch + 1 >= 1 entries, got none")
    }
    if vals[0] != 0 {
        bail!("fused-attn: {name} must start at 0, got {}", vals[0])
    }
    for (i, w) in vals.windows(2).enumerate() {
        if w[1] < w[0] {
            bail!("fused-attn: {name} must be non-decreasing, but entry {} = {} < entry {i} = {}", i + 1, w[1], w[0])
        }
    }
    let last = *vals.last().unwrap_or(&0);
    if let Some((total, what)) = total {
        if last != total as i64 {
            bail!("fused-attn: the last entry of {name} ({last}) must equal {what} ({total})")
        }
    }
    if last > i32::MAX as i64 {
        bail!("fused-attn: {name} reaches {last}, above the supported maximum {}", i32::MAX)
    }
    Ok(vals.iter().map(|&x| x as usize).collect())
}

/// Validates a packed call and returns its problem: layout [`SeqLayout::Packed`], `batch`
/// sequences, `seq_q`/`seq_k` the caller's maxima. Errors name the problem and the values.
/// `pre` holds the index values the back end already read (`crate::op::read_indices`); the
/// others are read here.
pub(crate) fn validate_packed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    vl: &Varlen,
    p: &AttnParams,
    pre: Prefetched,
) -> Result<Problem> {
    check_dtype(q.dtype())?;
    validate_packed_shapes(q, k, v, vl, p, pre)
}

/// [`validate_packed`] without the dtype restriction (the reference also takes f64).
pub(crate) fn validate_packed_shapes(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    vl: &Varlen,
    p: &AttnParams,
    mut pre: Prefetched,
) -> Result<Problem> {
    let (dt, dtk, dtv) = (q.dtype(), k.dtype(), v.dtype());
    if dtk != dt || dtv != dt {
        bail!("fused-attn: dtypes differ: q is {dt:?}, k is {dtk:?}, v is {dtv:?}")
    }
    check_float(dt)?;
    same_device(q, &[("k", k), ("v", v)])?;
    if let Some(s) = &p.alibi_slopes {
        same_device(q, &[("alibi_slopes", s)])?;
    }
    let (total_q, h, d) = match q.dims() {
        &[t, h, d] => (t, h, d),
        dims => bail!("fused-attn: varlen q must have rank 3 (total_q, heads, head_dim), got shape {dims:?}"),
    };
    if k.dims() != v.dims() {
        bail!("fused-attn: k and v shapes differ: k {:?}, v {:?}", k.dims(), v.dims())
    }
    // (rows of k/v, kv heads, head dim, pages)
    let (total_k, hk, dk, paging) = match (&vl.block_table, vl.page_block_size, k.dims()) {
        (None, None, &[t, hk, dk]) => (t, hk, dk, None),
        (None, None, dims) => {
            bail!("fused-attn: varlen k and v must have rank 3 (total_k, kv_heads, head_dim), got shape {dims:?}")
        }
        (None, Some(ps), _) => bail!("fused-attn: page_block_size = {ps} is given without a block_table"),
        (Some(_), None, _) => bail!("fused-attn: a block_table needs a page_block_size"),
        (Some(table), Some(ps), dims) => {
            if ps == 0 {
                bail!("fused-attn: page_block_size must be > 0")
            }
            let (blocks, hk, dk) = match *dims {
                [nb, page, hk, dk] => {
                    if page != ps {
                        bail!(
                            "fused-attn: page_block_size {ps} does not match the paged k/v shape {dims:?} (block size {page})"
                        )
                    }
                    (nb, hk, dk)
                }
                [slots, hk, dk] => {
                    if slots % ps != 0 {
                        bail!("fused-attn: page_block_size {ps} does not divide the {slots} rows of the paged k/v cache")
                    }
                    (slots / ps, hk, dk)
                }
                _ => bail!(
                    "fused-attn: paged k and v must have rank 4 (num_blocks, page_block_size, kv_heads, head_dim), got shape {dims:?}"
                ),
            };
            (blocks * ps, hk, dk, Some((table, ps, blocks)))
        }
    };
    if dk != d {
        bail!("fused-attn: head_dim differs between q ({d}) and k/v ({dk})")
    }
    check_elements("q", q.dims())?;
    check_elements("k", k.dims())?;
    check_elements("the LSE", &[h, total_q])?;

    // The sequences.
    index_device(q, &vl.seqlens_q, "seqlens_q")?;
    index_device(q, &vl.seqlens_k, "seqlens_k")?;
    let ints = [DType::U32, DType::I32];
    for (name, t) in [("seqlens_q", &vl.seqlens_q), ("seqlens_k", &vl.seqlens_k)] {
        if t.rank() != 1 {
            bail!("fused-attn: {name} must have rank 1 (batch + 1), got shape {:?}", t.dims())
        }
    }
    let q_vals = host_indices(&vl.seqlens_q, "seqlens_q", &ints, &mut pre)?;
    let cu_q = cumulative(&q_vals, "seqlens_q", Some((total_q, "total_q")))?;
    let total_k_check = if paging.is_none() { Some((total_k, "total_k")) } else { None };
    // The same tensor for q and k (self-attention) is read once: on a GPU each read is a
    // device-to-host copy that waits for the stream.
    let k_vals = if vl.seqlens_k.id() == vl.seqlens_q.id() {
        q_vals
    } else {
        host_indices(&vl.seqlens_k, "seqlens_k", &ints, &mut pre)?
    };
    let cu_k = cumulative(&k_vals, "seqlens_k", total_k_check)?;
    if cu_k.len() != cu_q.len() {
        bail!(
            "fused-attn: seqlens_q and seqlens_k must have the same length (batch + 1), got {} and {}",
            cu_q.len(),
            cu_k.len()
        )
    }
    let batch = cu_q.len() - 1;
    let longest = |cu: &[usize]| cu.windows(2).map(|w| w[1] - w[0]).enumerate().max_by_key(|&(_, l)| l);
    for (name, cu, max) in [("q", &cu_q, vl.max_seqlen_q), ("k", &cu_k, vl.max_seqlen_k)] {
        if let Some((b, len)) = longest(cu) {
            if len > max {
                bail!("fused-attn: max_seqlen_{name} = {max} is smaller than sequence {b}'s length {len}")
            }
        }
    }
    if vl.max_seqlen_q > i32::MAX as usize || vl.max_seqlen_k > i32::MAX as usize {
        bail!("fused-attn: max_seqlen_q/k ({}, {}) exceed {}", vl.max_seqlen_q, vl.max_seqlen_k, i32::MAX)
    }

    // The block table.
    let pages = match paging {
        None => None,
        Some((table, page_size, num_blocks)) => {
            index_device(q, table, "block_table")?;
            let (tb, max_blocks) = match table.dims() {
                &[tb, mb] => (tb, mb),
                dims => bail!("fused-attn: block_table must have rank 2 (batch, max_blocks), got shape {dims:?}"),
            };
            if tb != batch {
                bail!("fused-attn: block_table has {tb} rows but the batch has {batch} sequences")
            }
            let vals = host_indices(table, "block_table", &ints, &mut pre)?;
            for b in 0..batch {
                let used = (cu_k[b + 1] - cu_k[b]).div_ceil(page_size);
                if used > max_blocks {
                    bail!(
                        "fused-attn: sequence {b} has {} keys, {used} blocks of {page_size}, but the block_table has {max_blocks} columns",
                        cu_k[b + 1] - cu_k[b]
                    )
                }
                for (j, &e) in vals[b * max_blocks..][..used].iter().enumerate() {
                    if e < 0 || e as usize >= num_blocks {
                        bail!(
                            "fused-attn: block_table[{b}, {j}] = {e} is outside the paged cache's {num_blocks} blocks"
                        )
                    }
                }
            }
            // Unused entries (padding) are never read; store them as 0.
            let mut table = vec![0u32; batch * max_blocks];
            for b in 0..batch {
                let used = (cu_k[b + 1] - cu_k[b]).div_ceil(page_size);
                for j in 0..used {
                    table[b * max_blocks + j] = vals[b * max_blocks + j] as u32;
                }
            }
            Some(Pages { table, max_blocks, page_size, num_blocks })
        }
    };

    // The multimodal prefix ranges.
    let (ranges, max_ranges) = match &vl.mm_prefix_ranges {
        None => (Vec::new(), 0),
        Some(t) => {
            index_device(q, t, "mm_prefix_ranges")?;
            let (rb, mr) = match t.dims() {
                &[rb, mr, 2] => (rb, mr),
                dims => bail!(
                    "fused-attn: mm_prefix_ranges must have shape (batch, max_ranges, 2) = ({batch}, _, 2), got {dims:?}"
                ),
            };
            if rb != batch {
                bail!("fused-attn: mm_prefix_ranges has {rb} rows but the batch has {batch} sequences")
            }
            let vals = host_indices(t, "mm_prefix_ranges", &[DType::I32], &mut pre)?;
            let mut ranges = Vec::with_capacity(batch * mr);
            for b in 0..batch {
                let lk = cu_k[b + 1] - cu_k[b];
                for r in 0..mr {
                    let (s, e) = (vals[(b * mr + r) * 2], vals[(b * mr + r) * 2 + 1]);
                    if s > e {
                        bail!("fused-attn: mm_prefix_ranges[{b}, {r}] = [{s}, {e}) starts after it ends")
                    }
                    if s < e && (s < 0 || e > lk as i64) {
                        bail!(
                            "fused-attn: mm_prefix_ranges[{b}, {r}] = [{s}, {e}) lies outside sequence {b}'s {lk} keys"
                        )
                    }
                    let (s, e) = if s < e { (s as i32, e as i32) } else { (0, 0) };
                    ranges.push([s, e]);
                }
            }
            let max_ranges = if ranges.iter().any(|&[s, e]| s < e) { mr } else { 0 };
            if max_ranges == 0 {
                ranges.clear();
            }
            (ranges, max_ranges)
        }
    };

    // The problem's seq_q/seq_k are the longest sequences' lengths, not the caller's
    // max_seqlen (checked above to be at least those): the kernels size grids, row groups and
    // workspaces from them, and a max_seqlen far above every sequence (i32::MAX is accepted)
    // only bought empty blocks and workspace. Windows normalize on them as well (a window
    // that reaches past the longest sequence reaches past every one).
    let longest_len = |cu: &[usize]| longest(cu).map_or(0, |(_, l)| l);
    let mut problem = problem_from_params(p, (batch, longest_len(&cu_q), longest_len(&cu_k), h, hk, d))?;
    let device = upload(q.device(), &cu_q, &cu_k, pages.as_ref(), &ranges, max_ranges)?;
    problem.layout = SeqLayout::Packed(Arc::new(Packed { cu_q, cu_k, pages, ranges, max_ranges, device }));
    Ok(problem)
}

/// The checked index arrays as i32 tensors on `dev`: one host-to-device copy of them all,
/// one after another, and contiguous views into it (each copy costs a driver call and an
/// allocation; a decode step of a paged cache otherwise paid four).
fn upload(
    dev: &Device,
    cu_q: &[usize],
    cu_k: &[usize],
    pages: Option<&Pages>,
    ranges: &[[i32; 2]],
    max_ranges: usize,
) -> Result<PackedTensors> {
    let batch = cu_q.len() - 1;
    let mut all: Vec<i32> = Vec::with_capacity(cu_q.len() + cu_k.len() + pages.map_or(0, |pg| pg.table.len()));
    all.extend(cu_q.iter().map(|&v| v as i32));
    all.extend(cu_k.iter().map(|&v| v as i32));
    if let Some(pg) = pages {
        all.extend(pg.table.iter().map(|&v| v as i32));
    }
    if max_ranges > 0 {
        all.extend(ranges.iter().flatten().copied());
    }
    let all = uploaded(dev, all)?;
    let mut at = 0;
    let mut take = |n: usize| {
        let view = all.narrow(0, at, n);
        at += n;
        view
    };
    Ok(PackedTensors {
        cu_q: take(cu_q.len())?,
        cu_k: take(cu_k.len())?,
        block_table: match pages {
            None => None,
            Some(pg) => Some(take(pg.table.len())?.reshape((batch, pg.max_blocks))?),
        },
        ranges: if max_ranges == 0 {
            None
        } else {
            Some(take(batch * max_ranges * 2)?.reshape((batch, max_ranges, 2))?)
        },
    })
}

/// The last index upload per GPU device (candle's `Device`, one per `Device::new_cuda`), with
/// the host values it holds: at most [`KEPT_UPLOADS`] devices, the oldest upload dropped first,
/// so that a program that makes a new `Device` per request does not keep every one alive.
static LAST_UPLOAD: Mutex<Vec<(Device, Vec<i32>, Tensor)>> = Mutex::new(Vec::new());

/// How many devices' last uploads [`LAST_UPLOAD`] keeps.
const KEPT_UPLOADS: usize = 4;

/// `all` as an i32 tensor on `dev`. On a GPU the last upload is reused when its values are
/// `all`'s, entry for entry: a model's layers call the attention of one decode step with the
/// same index tensors, and each upload is a host-to-device copy on the stream, ahead of the
/// kernel, that the GPU waits for (32 KiB of block table for 32 sequences of 4096 keys in
/// 16-key pages). The kept tensor is never written, and a new one replaces it when the values
/// change; comparing costs the host a pass over the values.
fn uploaded(dev: &Device, all: Vec<i32>) -> Result<Tensor> {
    if !dev.is_cuda() {
        let len = all.len();
        return Tensor::from_vec(all, len, dev);
    }
    let mut last = LAST_UPLOAD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, vals, t)) = last.iter().find(|(d, _, _)| d.same_device(dev)) {
        if *vals == all {
            return Ok(t.clone());
        }
    }
    let t = Tensor::new(all.as_slice(), dev)?;
    last.retain(|(d, _, _)| !d.same_device(dev));
    if last.len() >= KEPT_UPLOADS {
        last.remove(0);
    }
    last.push((dev.clone(), all, t.clone()));
    Ok(t)
}
