//! The prefill forward: kernels/fwd_sm80.cu, one block per (batch, head, query block).
//!
//! * f16/bf16: the tensor-core FlashAttention-2 kernel, one instance per head dim
//!   (src/cuda/instances.rs); other head dims run on the next larger instance, zero-padded
//!   inside the kernel.
//! * f32: a plain-FMA kernel with the same semantics (no TF32: its error stays at the level
//!   of candle's f32 matmul, which runs without TF32 by default).

use candle_core::cuda_backend::cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaStorage, Layout, Result, Tensor};

use super::instances::{Arch, Family, Instance, KernelKey};
use super::params::FattnParams;
use super::{
    alibi_slopes_ptr, common_params, dev_qkv, heuristics, query_rows, to_i32, with_packed, Entry, KernelDtype,
};
use crate::problem::Problem;

/// The prefill instance for `p` in `T`. `_mods` instances apply softcap/ALiBi; the plain ones
/// fold the scale into exp2 after the row max, which needs a positive scale, so a scale <= 0
/// takes `_mods` too (the f32 kernel serves both).
fn instance<T: KernelDtype>(p: &Problem) -> Result<&'static Instance> {
    let mods = p.softcap > 0.0 || p.has_alibi || p.scale <= 0.0;
    heuristics::instance(KernelKey { family: Family::Fwd, dtype: T::DTYPE, head_dim: p.head_dim, mods }, Arch::Sm80)
}

/// The prefill forward in `T`, dense or packed (varlen, paged). `alibi` is `(batch, heads)`
/// f32, contiguous, on q's device.
pub(super) fn forward<T: KernelDtype>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<(CudaStorage, Option<CudaStorage>)> {
    let dev = &q.device;
    let stream = dev.cuda_stream();
    let inst = instance::<T>(p)?;
    let kernel = heuristics::prepare_entry(dev, inst, Entry::of(p))?;
    let smem_bytes = inst.smem_bytes(to_i32(p.head_dim, "head_dim")? as u32);
    kernel.check_smem(smem_bytes)?;

    let elem = std::mem::size_of::<T>();
    let [qt, kt, vt] = dev_qkv::<T>(p, (q, ql), k, v, &stream)?;
    let rows = query_rows(p);
    let out_len = rows * p.heads * p.head_dim;
    // SAFETY: the kernel writes every element of the (batch, seq_q, heads, head_dim) output
    // (packed: (total_q, heads, head_dim)): the grid covers every (batch, head, query block)
    // up to seq_q (packed: the longest sequence, so every sequence's rows), and each block
    // stores all its rows below its sequence's length and all columns below head_dim, zeros
    // for rows that see no key.
    let mut out = unsafe { dev.alloc::<T>(out_len) }?;
    // SAFETY: as `out`: the block that stores a row also stores its log-sum-exp.
    let mut lse = if p.want_lse { Some(unsafe { dev.alloc::<f32>(rows * p.heads) }?) } else { None };

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    // One CTA per (batch, head, query block), in a 1-D grid (see `query_block` in the kernel):
    // dense, every block up to seq_q; packed, the listed blocks of every sequence × heads.
    let block_m = inst.block_rows as usize;
    let items = p.packed().map(|_| work_items(p, block_m)).transpose()?;
    let blocks = match &items {
        None => p.batch * p.seq_q.div_ceil(block_m),
        Some(items) => items.len() / 2,
    };
    let grid_x = to_i32(blocks * p.heads, "query blocks · heads")? as u32;
    if grid_x == 0 {
        // Packed batches whose sequences all have no queries: nothing to write.
        drop((qt, kt, vt));
        let lse = lse.map(|l| CudaStorage::wrap_cuda_slice(l, dev.clone()));
        return Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), lse));
    }
    let items = items.map(|items| stream.clone_htod(&items)).transpose().w()?;
    let items_len = to_i32(blocks, "query blocks")?;
    with_packed(p, &stream, |packed| {
        let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
        let lse_ptr = lse.as_mut().map(|l| l.device_ptr_mut(&stream));
        let items_ptr = items.as_ref().map(|i| i.device_ptr(&stream));
        let params = packed.apply(FattnParams {
            lse: lse_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
            vec_out: (o_ptr.is_multiple_of(16) && p.head_dim.is_multiple_of(16 / elem)) as i32,
            work_items: items_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
            work_items_len: if items_ptr.is_some() { items_len } else { 0 },
            ..common_params(p, [&qt, &kt, &vt], o_ptr, alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr), elem)?
        });
        let cfg =
            LaunchConfig { grid_dim: (grid_x, 1, 1), block_dim: (inst.threads, 1, 1), shared_mem_bytes: smem_bytes };
        let mut builder = stream.launch_builder(&kernel.func);
        builder.arg(&params);
        // SAFETY: the kernel's one argument is `FattnParams` by value, matching its C++
        // signature (every offset and the size asserted on both sides). Its pointers are live
        // device allocations held by `q`, `k`, `v`, `out`, the alibi storage and (packed)
        // the problem's own checked index tensors for the whole call, and the strides and
        // sizes describe them (validated by `crate::problem::validate` or
        // `crate::packed::validate_packed`: every cu_seqlens entry within the rows, every
        // block-table entry a sequence uses below num_blocks, every range within its
        // sequence); the kernel reads only inside those bounds. Packed, `items` holds
        // `grid_x / heads` (sequence, first row) pairs of real query blocks (`work_items`).
        unsafe { builder.launch(cfg) }.w()?;
        Ok(())
    })?;
    drop(alibi_ptr);
    drop((qt, kt, vt));
    let lse = lse.map(|l| CudaStorage::wrap_cuda_slice(l, dev.clone()));
    Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), lse))
}

/// The query blocks of a packed prefill launch, as flat (sequence, first query row) i32 pairs:
/// every block of `block_m` rows of every sequence, heaviest first. A block's weight is the
/// span of keys its rows see (the hull of its first and last rows' ranges, `Problem::key_range`
/// of the sequence alone) plus one key block of fixed cost; ties keep (sequence, row) order.
/// Longest-processing-time order: the short blocks run last and fill the final wave, where a
/// grid in sequence order ends on a few long blocks (kernels/fwd_sm80.cu, `query_block`).
fn work_items(p: &Problem, block_m: usize) -> Result<Vec<i32>> {
    let Some(pk) = p.packed() else { return Ok(Vec::new()) };
    let mut items: Vec<(usize, usize, usize)> = Vec::new();
    for b in 0..pk.batch() {
        let len_q = pk.len_q(b);
        if len_q == 0 {
            continue;
        }
        let seq = p.sequence(b);
        for m0 in (0..len_q).step_by(block_m) {
            let last = (m0 + block_m).min(len_q) - 1;
            let (lo0, hi0) = seq.key_range(m0);
            let (lo1, hi1) = seq.key_range(last);
            let span = hi0.max(hi1).saturating_sub(lo0.min(lo1));
            items.push((span + 64, b, m0));
        }
    }
    items.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut flat = Vec::with_capacity(items.len() * 2);
    for (_, b, m0) in items {
        flat.push(to_i32(b, "sequence index")?);
        flat.push(to_i32(m0, "query row")?);
    }
    Ok(flat)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Tensor};

    use super::work_items;
    use crate::packed::{validate_packed_shapes, Varlen};
    use crate::AttnParams;

    /// Every query block of every sequence is listed exactly once, with its first row, and the
    /// list is heaviest first (the kernel's grid is this list × heads).
    #[test]
    fn work_items_list_every_query_block_once_heaviest_first() -> candle_core::Result<()> {
        let lens_q = [0usize, 1, 300, 129, 128, 17, 0, 1000];
        let lens_k = [5usize, 1, 300, 4000, 128, 900, 0, 1000];
        let cu = |lens: &[usize]| {
            let mut acc = vec![0u32];
            for &l in lens {
                acc.push(acc.last().unwrap() + l as u32);
            }
            Tensor::new(acc, &Device::Cpu)
        };
        let (tq, tk) = (lens_q.iter().sum::<usize>(), lens_k.iter().sum::<usize>());
        let q = Tensor::zeros((tq, 4, 64), DType::F32, &Device::Cpu)?;
        let k = Tensor::zeros((tk, 2, 64), DType::F32, &Device::Cpu)?;
        let vl = Varlen::new(&cu(&lens_q)?, &cu(&lens_k)?, 1000, 4000);
        for causal in [false, true] {
            let p = validate_packed_shapes(&q, &k, &k, &vl, &AttnParams::new(0.125).causal(causal))?;
            for block_m in [16, 64, 128] {
                let items = work_items(&p, block_m)?;
                let mut seen: Vec<(i32, i32)> = items.chunks(2).map(|w| (w[0], w[1])).collect();
                let weights: Vec<usize> = seen
                    .iter()
                    .map(|&(b, m0)| {
                        let seq = p.sequence(b as usize);
                        let last = (m0 as usize + block_m).min(lens_q[b as usize]) - 1;
                        let (a, z) = (seq.key_range(m0 as usize), seq.key_range(last));
                        z.1.max(a.1) - a.0.min(z.0)
                    })
                    .collect();
                assert!(weights.windows(2).all(|w| w[0] >= w[1]), "not heaviest first: {weights:?}");
                seen.sort();
                let want: Vec<(i32, i32)> = lens_q
                    .iter()
                    .enumerate()
                    .flat_map(|(b, &l)| (0..l).step_by(block_m).map(move |m0| (b as i32, m0 as i32)))
                    .collect();
                assert_eq!(seen, want, "causal {causal}, block_m {block_m}");
            }
        }
        Ok(())
    }
}
