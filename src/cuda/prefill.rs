//! The prefill forward: kernels/fwd_sm80.cu, one block per (batch, head, query block).
//!
//! * f16/bf16: the tensor-core FlashAttention-2 kernel, one instance per head dim
//!   (src/cuda/instances.rs); other head dims run on the next larger instance, zero-padded
//!   inside the kernel.
//! * on compute capability 9.0, the dense f16/bf16 problems it covers run on the Hopper
//!   kernel instead (prefill_sm90.rs, kernels/fwd_sm90.cu);
//! * f32: a plain-FMA kernel with the same semantics (no TF32: its error stays at the level
//!   of candle's f32 matmul, which runs without TF32 by default).

use candle_core::cuda_backend::cudarc::driver::{CudaViewMut, DevicePtrMut, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaStorage, Layout, Result, Tensor};

use super::instances::{Arch, Family, Instance, KernelKey};
use super::params::FattnParams;
use super::{
    alibi_slopes_ptr, common_params, dev_qkv, heuristics, query_rows, to_i32, with_packed, Entry, KernelDtype, OutBuf,
};
use crate::problem::Problem;

/// The prefill instance for `p` in `T`: for problems that need the softcap/ALiBi arithmetic
/// ([`super::prefill_needs_mods`]: softcap/ALiBi, scales ≤ 0, large scales), an instance that
/// has it. d64 has a plain and a `_mods` instance; every other sm_80 instance is `Both`, its
/// kernel switching at run time on the same condition (kernels/fwd_sm80.cu `mods_on`).
fn instance<T: KernelDtype>(p: &Problem) -> Result<&'static Instance> {
    let mods = super::prefill_needs_mods(p);
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
    caller: Option<CudaViewMut<'_, T>>,
) -> Result<(Option<CudaStorage>, Option<CudaStorage>)> {
    let mut caller = caller;
    if let Some(done) = super::prefill_sm90::forward::<T>(p, (q, ql), k, v, alibi, &mut caller)? {
        return Ok(done);
    }
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
    // Into the caller's output (`attention_varlen_into`) when given.
    let mut out = unsafe { OutBuf::new(dev, out_len, caller) }?;
    // SAFETY: as `out`: the block that stores a row also stores its log-sum-exp.
    let mut lse = if p.want_lse { Some(unsafe { dev.alloc::<f32>(rows * p.heads) }?) } else { None };

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    // One CTA per (batch, head, query block), in a 1-D grid (see `query_block_tail` in the
    // kernel), handed out in index order: under a right-bounded mask the last pairs' tiles go
    // heaviest first across those pairs (`heuristics::lightest_last_pairs`), in rounds of the
    // blocks the GPU holds at once.
    // The kernels find a block's rows in i32 (kernels/common/grid.cuh `query_block_tail_by`: the
    // query blocks as (seq_q + rows - 1) / rows): a seq_q within one tile of i32::MAX would
    // wrap there to negative rows, read before q and write before the output (session 40's
    // audit; the packed path reached it through max_seqlen = i32::MAX before a1e91ba).
    to_i32(p.seq_q + inst.block_rows as usize, "seq_q plus one query tile")?;
    let query_blocks = p.seq_q.div_ceil(inst.block_rows as usize);
    let grid_x = to_i32(p.batch * p.heads * query_blocks, "batch · heads · query blocks")? as u32;
    let tail_pairs = if lightest_last_on() {
        let resident =
            kernel.func.occupancy_max_active_blocks_per_multiprocessor(inst.threads, smem_bytes as usize, None).w()?;
        let round = kernel.device.sms as usize * resident.max(1) as usize;
        heuristics::lightest_last_pairs(p, round, query_blocks, elem)
    } else {
        0
    };
    with_packed(p, &stream, |packed| {
        let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
        let lse_ptr = lse.as_mut().map(|l| l.device_ptr_mut(&stream));
        let params = packed.apply(FattnParams {
            lse: lse_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
            vec_out: (o_ptr.is_multiple_of(16) && p.head_dim.is_multiple_of(16 / elem)) as i32,
            tail_groups: to_i32(tail_pairs, "tail pairs")?,
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
        // sequence); the kernel reads only inside those bounds.
        unsafe { builder.launch(cfg) }.w()?;
        crate::cuda_kernels::record_prefill(inst.name);
        Ok(())
    })?;
    drop(alibi_ptr);
    drop((qt, kt, vt));
    let lse = lse.map(|l| CudaStorage::wrap_cuda_slice(l, dev.clone()));
    Ok((out.into_storage(dev), lse))
}

/// Whether the sm_80 prefill grids end on their lightest tiles (`heuristics::lightest_last_pairs`):
/// `FUSED_ATTN_SM80_TILE_ORDER` unset or anything but `plain` (a diagnostic switch for A/B runs).
fn lightest_last_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FUSED_ATTN_SM80_TILE_ORDER").map_or(true, |v| v.trim() != "plain"))
}
