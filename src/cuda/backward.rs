//! The backward (FlashAttention-2): kernels/bwd_sm80.cu, launched on candle's stream; on
//! compute capability 9.0 the main kernel is kernels/bwd_sm90.cu's where it covers the problem
//! (backward_sm90.rs), between the same preprocess and convert kernels.
//!
//! In stream order: a memset zeroes the f32 dQ accumulator (and the dK/dV accumulators when
//! the group of a kv head is split over CTAs); `fattn_bwd_preprocess_*` writes D = rowsum(dO∘O)
//! and lse·log2 e per padded row; the main kernel (tensor cores for f16/bf16, one instance
//! per head dim in src/cuda/instances.rs, smaller head dims zero-padded onto the next one;
//! plain f32 FMA for f32) accumulates dQ with atomics and writes dK/dV; `fattn_bwd_convert_*`
//! scales dQ into the input dtype (and dK/dV when they were accumulated). Where a block may
//! opt into the shared memory of an instance's large-smem tile (d128: 145 KiB, sm_80 and
//! sm_90), its `_l` entry points run instead of the 99 KiB tile (same launch geometry;
//! `FUSED_ATTN_BWD_LARGE_TILES=0` keeps the 99 KiB tiles).
//!
//! Packed (varlen, unpaged) problems run the same algorithm, through the main kernel's
//! `_varlen` entry point (the preprocess/convert kernels serve both): q/o/dO are `(total_q, heads, d)`,
//! k/v `(total_k, kv_heads, d)`, the LSE `(heads, total_q)`; the kernels read each
//! sequence's rows from `cu_q`/`cu_k` on the device, and the f32 workspaces are per head with
//! [`PACKED_GAP`] padding rows per sequence.
//!
//! The parameters cross the FFI boundary as `FattnBwdParams` (which embeds the forward's
//! `FattnParams`) and `FattnBwdConvertParams`, declared in src/cuda/params.rs.

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg, SyncOnDrop,
    ValidAsZeroBits,
};
use candle_core::cuda_backend::{CudaDevice, WrapErr};
use candle_core::{bail, CudaStorage, DType, Layout, Result, Storage, Tensor};
use half::{bf16, f16};

use super::backward_sm90;
use super::heuristics::{self, Prepared};
use super::instances::{bwd_large_smem, Arch, Dtype, Family, Instance, KernelKey};
use super::params::{FattnBwdConvertParams, FattnBwdParams, FattnParams};
use super::{alibi_slopes_ptr, common_params, dev_tensor, to_i32, Entry, KernelDtype};
use crate::problem::Problem;

/// Query rows are padded to a multiple of this in the f32 workspaces (every instance's
/// query block divides it), so that the kernels read and add whole blocks without tests.
const SEQ_Q_PAD: usize = 128;

// SAFETY: `#[repr(C)]` plain data (integers, floats and the plain-data `FattnParams`, no
// references) with the layout of the C++ struct, field by field (offsets and size asserted on
// both sides, see params.rs); the kernels receive it by value.
unsafe impl DeviceRepr for FattnBwdParams {}
// SAFETY: as `FattnBwdParams`.
unsafe impl DeviceRepr for FattnBwdConvertParams {}

/// The instance of `family` that runs `p` in `T`. Every sm_80 instance serves both: softcap/ALiBi
/// switch the kernel onto its `_mods` arithmetic at run time on this same condition
/// (kernels/bwd_sm80.cu `mods_on`); the plain arithmetic takes any scale (it multiplies by it
/// before exp2, no row max).
fn instance<T: KernelDtype>(p: &Problem, family: Family) -> Result<&'static Instance> {
    let mods = p.softcap > 0.0 || p.has_alibi;
    heuristics::instance(KernelKey { family, dtype: T::DTYPE, head_dim: p.head_dim, mods }, Arch::Sm80)
}

/// The CUDA backward (FlashAttention-2): dq, dk, dv, contiguous, in the input dtype.
/// `lse` is f32, contiguous `(batch, heads, seq_q)`, natural log, `-inf` for rows without a
/// visible key; `alibi` is `(batch, heads)` f32, contiguous, on q's device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    p: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    o: (&CudaStorage, &Layout),
    d_o: (&CudaStorage, &Layout),
    lse: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
    if let Some(packed) = p.packed() {
        if packed.pages.is_some() {
            bail!("fused-attn cuda backward: a paged KV cache has no backward (pass k and v packed)")
        }
    } else if p.has_mm_ranges() {
        bail!("fused-attn cuda backward: multimodal prefix ranges are supported on packed batches only")
    }
    let dtype = q.0.dtype();
    for (name, s) in [("k", k.0), ("v", v.0), ("o", o.0), ("d_o", d_o.0)] {
        if s.dtype() != dtype {
            bail!("fused-attn cuda backward: {name} is {:?} but q is {dtype:?}", s.dtype())
        }
    }
    if lse.0.dtype() != DType::F32 {
        bail!("fused-attn cuda backward: lse must be f32, got {:?}", lse.0.dtype())
    }
    let lse_dims = p.lse_shape();
    if lse.1.dims() != lse_dims || !lse.1.is_contiguous() {
        bail!(
            "fused-attn cuda backward: lse must be contiguous with shape {lse_dims:?}, got shape {:?} strides {:?}",
            lse.1.dims(),
            lse.1.stride()
        )
    }
    match dtype {
        DType::F16 => launch::<f16>(p, q, k, v, o, d_o, lse, alibi),
        DType::BF16 => launch::<bf16>(p, q, k, v, o, d_o, lse, alibi),
        DType::F32 => launch::<f32>(p, q, k, v, o, d_o, lse, alibi),
        dt => bail!("fused-attn cuda backward: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    }
}

/// Launches one kernel whose single argument is `params`.
///
/// # Safety
/// `params` must match the kernel's C++ parameter type, every device pointer in it must be
/// live (its guard held by the caller) until the launch is enqueued, and `cfg` must be the
/// geometry the kernel expects for those parameters.
unsafe fn launch_one<P: DeviceRepr>(
    stream: &Arc<CudaStream>,
    func: &CudaFunction,
    cfg: LaunchConfig,
    params: &P,
) -> Result<()> {
    let mut builder = stream.launch_builder(func);
    builder.arg(params);
    // SAFETY: forwarded from this function's contract.
    unsafe { builder.launch(cfg) }.w()?;
    Ok(())
}

/// A one-dimensional launch of `blocks` blocks of `inst`, with `smem_bytes` of dynamic shared
/// memory.
fn launch_config(inst: &Instance, blocks: i32, smem_bytes: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (inst.threads, 1, 1), shared_mem_bytes: smem_bytes }
}

/// A rank-3 packed `(rows, heads, head_dim)` layout as the rank-4 `(1, rows, heads,
/// head_dim)` one that [`dev_tensor`] reads (batch stride 0: the kernels offset rows per
/// sequence). Dense rank-4 layouts pass through.
fn as_rank4(l: &Layout) -> Result<Layout> {
    match (l.dims(), l.stride()) {
        (&[n, h, d], &[s0, s1, s2]) => Ok(Layout::new((1, n, h, d).into(), vec![0, s0, s1, s2], l.start_offset())),
        (&[_, _, _, _], _) => Ok(l.clone()),
        (dims, _) => bail!("fused-attn cuda backward: expected a rank-3 (packed) or rank-4 tensor, got shape {dims:?}"),
    }
}

/// Raw pointer (start offset applied) of a contiguous i32 index tensor of a packed batch on
/// q's device; the guard must live until the launches are enqueued.
fn i32_ptr<'a>(storage: &'a Storage, layout: &Layout, stream: &'a CudaStream) -> Result<(u64, SyncOnDrop<'a>)> {
    match storage {
        Storage::Cuda(c) => {
            let (base, guard) = c.as_cuda_slice::<i32>()?.device_ptr(stream);
            Ok((base + (layout.start_offset() * 4) as u64, guard))
        }
        _ => bail!("fused-attn cuda backward: the packed index tensors must be on q's CUDA device"),
    }
}

/// Rows per head of a packed workspace over `total` rows of `batch` sequences: each sequence
/// starts at `packed_ws_base` (kernels/bwd_sm80.cu), `PACKED_GAP` rows further per sequence,
/// rounded down to 8, so that whole query/key blocks past its end stay inside it.
/// Must equal `kPackedGap` there.
const PACKED_GAP: usize = 136;

/// Set to `0`, the backward runs the 99 KiB tiles even where the device allows the large-smem
/// ones (a same-binary A/B on the GPU machine, and the sm_86/sm_89 path tested on an H100).
/// Read once per process.
const LARGE_TILES_VAR: &str = "FUSED_ATTN_BWD_LARGE_TILES";

fn large_tiles_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(LARGE_TILES_VAR).is_none_or(|v| v != "0"))
}

#[allow(clippy::too_many_arguments)]
fn launch<T: KernelDtype + ValidAsZeroBits>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    (k, kl): (&CudaStorage, &Layout),
    (v, vl): (&CudaStorage, &Layout),
    (o, ol): (&CudaStorage, &Layout),
    (d_o, dol): (&CudaStorage, &Layout),
    (lse, lsel): (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
    let dev: &CudaDevice = &q.device;
    let stream = dev.cuda_stream();
    let d = p.head_dim;
    let packed = p.packed();
    // Rows of q (and o, dO, dq) and of k/v (and dk, dv) in memory.
    let (q_total, k_total) = match packed {
        Some(pk) => (pk.total_q(), pk.cu_k[pk.batch()]),
        None => (p.batch * p.seq_q, p.batch * p.seq_k),
    };
    let q_len = q_total * p.heads * d;
    let kv_len = k_total * p.kv_heads * d;
    if p.batch == 0 || p.heads == 0 || d == 0 || q_total == 0 || k_total == 0 {
        // Nothing to differentiate: empty (or zero-width) gradients, or no query row sees a
        // key (no keys at all, or no queries whose scores could depend on them).
        let dq = dev.alloc_zeros::<T>(q_len)?;
        let dk = dev.alloc_zeros::<T>(kv_len)?;
        let dv = dev.alloc_zeros::<T>(kv_len)?;
        return Ok((
            CudaStorage::wrap_cuda_slice(dq, dev.clone()),
            CudaStorage::wrap_cuda_slice(dk, dev.clone()),
            CudaStorage::wrap_cuda_slice(dv, dev.clone()),
        ));
    }
    // The kernels index rows and keys in i32, including row + seq_k - seq_q and the window
    // bounds derived from it; packed workspaces' rows too.
    to_i32(p.seq_q + p.seq_k, "seq_q + seq_k")?;
    let elem = std::mem::size_of::<T>();
    let (ql, kl, vl, ol, dol) = (as_rank4(ql)?, as_rank4(kl)?, as_rank4(vl)?, as_rank4(ol)?, as_rank4(dol)?);
    let qt = dev_tensor::<T>(q, &ql, &stream)?;
    let kt = dev_tensor::<T>(k, &kl, &stream)?;
    let vt = dev_tensor::<T>(v, &vl, &stream)?;
    let ot = dev_tensor::<T>(o, &ol, &stream)?;
    let dot = dev_tensor::<T>(d_o, &dol, &stream)?;
    // On compute capability 9.0, the Hopper main kernel where it covers the problem (dense
    // f16/bf16, head dim <= 128, strides a tensor map describes); the same preprocess,
    // workspaces and convert either way.
    let hopper = backward_sm90::plan::<T>(p, dev, [&qt, &kt, &vt, &dot])?;
    let main_inst = match &hopper {
        Some(h) => h.inst,
        None => instance::<T>(p, Family::Bwd)?,
    };
    let pre_inst = instance::<T>(p, Family::BwdPreprocess)?;
    let convert_inst = instance::<T>(p, Family::BwdConvert)?;
    // The packed (varlen) main kernel is the instance's `_varlen` entry point; where the device
    // lets a block opt into the instance's large-smem tile (d128: double-buffered, 2 barriers
    // per item instead of 5; kernels/bwd_sm80.cu, BwdTraitsLarge), its `_l` entry points,
    // which launch with the same threads, rows, keys and splits.
    let mut main: Prepared = heuristics::prepare_entry(dev, main_inst, Entry::of(p))?;
    let mut smem_bytes = main_inst.smem_bytes(to_i32(d, "head_dim")? as u32);
    let large = bwd_large_smem(main_inst);
    if hopper.is_none() && large > 0 && main.device.smem_optin >= large && large_tiles_enabled() {
        main = heuristics::prepare_entry(dev, main_inst, Entry::of(p).large())?;
        smem_bytes = large;
    }
    let preprocess = heuristics::prepare(dev, pre_inst)?;
    let convert = heuristics::prepare(dev, convert_inst)?;
    main.check_smem(smem_bytes)?;
    if main.blocks_per_sm == 0 {
        bail!(
            "fused-attn cuda backward: {} cannot be resident ({} threads, {smem_bytes} bytes of shared memory)",
            main_inst.name,
            main_inst.threads
        )
    }
    // Row length of the f32 accumulators: the tensor-core instances write whole tiles of
    // their head dim, the f32 kernel only the problem's columns.
    let d_inst = if T::DTYPE == Dtype::F32 { d } else { main_inst.head_dim as usize };

    let group = p.group_size();
    let key_blocks = p.seq_k.div_ceil(main_inst.key_block as usize);
    let ctas = key_blocks * main_inst.col_splits as usize * p.kv_heads * p.batch;
    let resident = main.device.sms as usize * main.blocks_per_sm as usize;
    let splits = heuristics::bwd_kv_splits(ctas, group, resident);
    let grid_main = to_i32(ctas * splits, "backward CTAs (key blocks · column splits · kv splits · kv heads · batch)")?;
    // Under a right-bounded mask the grid's last groups take their key blocks across those
    // groups, so that it ends on its lightest CTAs (kernels/common/bwd_index.cuh `bwd_cta`).
    let tail_groups = if lightest_last_on() {
        heuristics::lightest_last_groups(
            p,
            resident,
            key_blocks,
            ctas * splits / key_blocks.max(1),
            group / splits,
            elem,
        )
    } else {
        0
    };
    let seq_q_pad = p.seq_q.div_ceil(SEQ_Q_PAD) * SEQ_Q_PAD;
    let seq_k_pad = key_blocks * main_inst.key_block as usize;
    // Workspace rows per head (q rows; keys), and the (batch, heads) groups of them: dense
    // (batch, heads, seq_q_pad), packed (heads, total + gap · batch).
    let (ws_rows_q, ws_rows_k, ws_groups_q, ws_groups_k) = match packed {
        // Rounded up to 8 rows, so that every head's rows start 32-byte aligned (the main
        // kernel's 16-byte cp.async of lse/D).
        Some(_) => (
            (q_total + PACKED_GAP * p.batch).next_multiple_of(8),
            (k_total + PACKED_GAP * p.batch).next_multiple_of(8),
            p.heads,
            p.kv_heads,
        ),
        None => (seq_q_pad, seq_k_pad, p.batch * p.heads, p.batch * p.kv_heads),
    };
    let stat_words = ws_groups_q * ws_rows_q;
    // The kernels hold a sequence's first workspace row (< stat_words) in i32.
    to_i32(stat_words, "backward workspace rows (batch · heads · padded rows)")?;
    // The preprocess walks (batch, heads, seq_q_pad) rows in both layouts.
    let pre_rows = p.batch * p.heads * seq_q_pad;
    let pre_blocks = to_i32(pre_rows.div_ceil(pre_inst.block_rows as usize), "preprocess blocks")?;
    let q_rows = to_i32(q_total, "query rows")?;
    let k_rows = to_i32(k_total, "key rows")?;
    to_i32(ws_rows_q.max(ws_rows_k), "workspace rows")?;

    let (lse_base, lse_guard) = lse.as_cuda_slice::<f32>()?.device_ptr(&stream);
    let lse_ptr = lse_base + (lsel.start_offset() * std::mem::size_of::<f32>()) as u64;
    let packed_ptrs = packed
        .map(|pk| -> Result<_> {
            let cu_q = pk.device.cu_q.storage_and_layout();
            let cu_k = pk.device.cu_k.storage_and_layout();
            let ranges = pk.device.ranges.as_ref().map(|t| t.storage_and_layout());
            Ok((cu_q, cu_k, ranges, pk.max_ranges))
        })
        .transpose()?;

    // Workspaces. `stats` is written by the preprocess (D then lse·log2 e) in every row a
    // kernel reads; the accumulators start at zero (memset on the stream).
    // SAFETY: the preprocess writes every word the main kernel reads before it runs (dense:
    // all `2 · stat_words`; packed: each sequence's rows and the 128 after them, all that a
    // query block reads), and no other kernel reads `stats`.
    let mut stats = unsafe { dev.alloc::<f32>(2 * stat_words) }?;
    let mut dq_accum = dev.alloc_zeros::<f32>(stat_words * d_inst)?;
    let dkv_words = ws_groups_k * ws_rows_k * d_inst;
    let mut dkv_accum = if splits > 1 { Some(dev.alloc_zeros::<f32>(2 * dkv_words)?) } else { None };
    // SAFETY: dq is written in full by the convert kernel (one CTA per q row, every head and
    // column).
    let mut dq = unsafe { dev.alloc::<T>(q_len) }?;
    // SAFETY: dk is written in full either by the main kernel (kv_splits == 1: the CTA of
    // each (key block, column split, kv head, sequence) stores every key of its sequence and
    // column below head_dim, zeros where no row sees the key; the key blocks cover seq_k,
    // the longest sequence) or by the convert kernel (kv_splits > 1, one CTA per key row).
    let mut dk = unsafe { dev.alloc::<T>(kv_len) }?;
    // SAFETY: as dk.
    let mut dv = unsafe { dev.alloc::<T>(kv_len) }?;

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    {
        // Packed: the device copies of cu_q, cu_k (and ranges), i32, contiguous.
        let cu_q = packed_ptrs.as_ref().map(|(c, _, _, _)| i32_ptr(&c.0, c.1, &stream)).transpose()?;
        let cu_k = packed_ptrs.as_ref().map(|(_, c, _, _)| i32_ptr(&c.0, c.1, &stream)).transpose()?;
        let ranges = packed_ptrs
            .as_ref()
            .and_then(|(_, _, r, _)| r.as_ref())
            .map(|r| i32_ptr(&r.0, r.1, &stream))
            .transpose()?;
        let max_ranges = packed_ptrs.as_ref().map_or(0, |(_, _, _, m)| *m);
        let (stats_ptr, _stats_guard) = stats.device_ptr_mut(&stream);
        let (dq_accum_ptr, _dq_accum_guard) = dq_accum.device_ptr_mut(&stream);
        let dkv = dkv_accum.as_mut().map(|s| s.device_ptr_mut(&stream));
        let (dk_accum_ptr, dv_accum_ptr) = match &dkv {
            Some((ptr, _)) => (*ptr, *ptr + (dkv_words * 4) as u64),
            None => (0, 0),
        };
        let (dk_ptr, _dk_guard) = dk.device_ptr_mut(&stream);
        let (dv_ptr, _dv_guard) = dv.device_ptr_mut(&stream);
        let fwd = FattnParams {
            // Here o is the forward's output, an input with its own strides, read by the
            // preprocess (16-byte loads when its rows are aligned).
            o_batch_stride: ot.strides.batch as i64,
            o_seq_stride: ot.strides.seq as i64,
            o_head_stride: ot.strides.head as i64,
            vec_out: ot.rows_16b_aligned(d, elem) as i32,
            lse: lse_ptr,
            cu_seqlens_q: cu_q.as_ref().map_or(0, |(ptr, _)| *ptr),
            cu_seqlens_k: cu_k.as_ref().map_or(0, |(ptr, _)| *ptr),
            mm_ranges: ranges.as_ref().map_or(0, |(ptr, _)| *ptr),
            max_mm_ranges: if ranges.is_some() { to_i32(max_ranges, "max multimodal ranges")? } else { 0 },
            tail_groups: to_i32(tail_groups, "backward tail groups")?,
            ..common_params(p, [&qt, &kt, &vt], ot.ptr, alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr), elem)?
        };
        let params = FattnBwdParams {
            fwd,
            d_o: dot.ptr,
            do_batch_stride: dot.strides.batch as i64,
            do_seq_stride: dot.strides.seq as i64,
            do_head_stride: dot.strides.head as i64,
            dsum: stats_ptr,
            lse_log2: stats_ptr + (stat_words * 4) as u64,
            dq_accum: dq_accum_ptr,
            dk_accum: dk_accum_ptr,
            dv_accum: dv_accum_ptr,
            dk: dk_ptr,
            dv: dv_ptr,
            seq_q_pad: to_i32(seq_q_pad, "padded seq_q")?,
            seq_k_pad: to_i32(seq_k_pad, "padded seq_k")?,
            head_dim_inst: to_i32(d_inst, "instance head_dim")?,
            kv_splits: to_i32(splits, "kv splits")?,
            heads_per_split: to_i32(group / splits, "heads per kv split")?,
            vec_do: dot.rows_16b_aligned(d, elem) as i32,
            ws_rows_q: to_i32(ws_rows_q, "workspace rows")?,
            ws_rows_k: to_i32(ws_rows_k, "workspace rows")?,
            total_q: if packed.is_some() { q_rows } else { 0 },
            pad_bwd_: 0,
        };

        if pre_blocks > 0 {
            // SAFETY: `fattn_bwd_preprocess_*` takes `FattnBwdParams` by value. It reads o, dO
            // (strided, inside the validated shapes; packed rows through cu_q) and lse
            // (`p.lse_shape()`, checked above), and writes one word per workspace row it
            // owns into each half of `stats` (`2 · stat_words` words); the grid has one warp
            // per (batch, head, row < seq_q_pad).
            unsafe { launch_one(&stream, &preprocess.func, launch_config(pre_inst, pre_blocks, 0), &params) }?;
        }
        if grid_main > 0 {
            // SAFETY: the main kernel takes `FattnBwdParams` by value; the grid is (key blocks
            // × column splits × kv splits × kv heads × batch) as `bwd_cta` decodes it, with
            // the block size and shared memory of the instance (asserted against the kernel's
            // traits at build time). It reads q, k, v, dO inside their shapes (each
            // sequence's rows; zero-filling padding), `stats` rows of its sequence's blocks,
            // and adds into dq_accum rows below the sequence's length and columns below
            // d_inst, into the dK/dV accumulators (its key block, when split), or stores
            // dk/dv keys of its sequence and columns below head_dim.
            let cfg = launch_config(main_inst, grid_main, smem_bytes);
            match &hopper {
                // SAFETY: as above; the Hopper kernel takes `FattnHopperBwdParams` by value (the
                // same `FattnBwdParams` behind tensor maps of q, k, v and dO, made from the
                // same tensors' pointers and strides, boxes of the instance's rows and keys)
                // and reads and writes the same memory.
                Some(h) => unsafe { launch_one(&stream, &main.func, cfg, &h.params(params)) }?,
                // SAFETY: see above.
                None => unsafe { launch_one(&stream, &main.func, cfg, &params) }?,
            }
            crate::cuda_kernels::record_backward(main_inst.name);
        }
        let base = FattnBwdConvertParams {
            batch: params.fwd.batch,
            head_dim: params.fwd.head_dim,
            d_inst: params.head_dim_inst,
            ..FattnBwdConvertParams::default()
        };
        if q_rows > 0 {
            let (dq_ptr, _dq_guard) = dq.device_ptr_mut(&stream);
            let c = FattnBwdConvertParams {
                src: dq_accum_ptr,
                dst: dq_ptr,
                heads: params.fwd.heads,
                seq: params.fwd.seq_q,
                seq_pad: params.ws_rows_q,
                scale: p.scale,
                cu_seqlens: params.fwd.cu_seqlens_q,
                ..base
            };
            // SAFETY: `fattn_bwd_convert_*` takes `FattnBwdConvertParams` by value; one CTA per
            // q row reads dq_accum at its workspace row (every head, col < d_inst) and writes
            // that row of dq, (rows, heads, head_dim), all of it.
            unsafe { launch_one(&stream, &convert.func, launch_config(convert_inst, q_rows, 0), &c) }?;
        }
        if splits > 1 && k_rows > 0 {
            for (src, dst) in [(dk_accum_ptr, dk_ptr), (dv_accum_ptr, dv_ptr)] {
                let c = FattnBwdConvertParams {
                    src,
                    dst,
                    heads: params.fwd.kv_heads,
                    seq: params.fwd.seq_k,
                    seq_pad: params.ws_rows_k,
                    scale: 1.0,
                    cu_seqlens: params.fwd.cu_seqlens_k,
                    ..base
                };
                // SAFETY: as for dq: the accumulator has ws_rows_k rows per kv head (dK
                // already scaled by the main kernel), the output (rows, kv_heads, head_dim),
                // every element written.
                unsafe { launch_one(&stream, &convert.func, launch_config(convert_inst, k_rows, 0), &c) }?;
            }
        }
    }
    drop(alibi_ptr);
    drop(lse_guard);
    drop((qt, kt, vt, ot, dot));
    drop(packed_ptrs);
    // The workspaces are freed in stream order (after the kernels that use them).
    drop((stats, dq_accum, dkv_accum));
    Ok((
        CudaStorage::wrap_cuda_slice(dq, dev.clone()),
        CudaStorage::wrap_cuda_slice(dk, dev.clone()),
        CudaStorage::wrap_cuda_slice(dv, dev.clone()),
    ))
}

/// Whether the backward grids end on their lightest CTAs (`heuristics::lightest_last_groups`):
/// `FUSED_ATTN_BWD_TILE_ORDER` unset or anything but `plain` (a diagnostic switch for A/B runs).
fn lightest_last_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FUSED_ATTN_BWD_TILE_ORDER").map_or(true, |v| v.trim() != "plain"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::instances::INSTANCES;

    #[test]
    fn every_main_kernel_entry_point_is_in_the_fatbin() {
        // The dense and packed entry points of every main-kernel instance, and the large-smem
        // ones where `bwd_large_smem` names them (kernels/bwd_sm80.cu expands those from the size),
        // in the PTX that every cubin of its fatbin is assembled from.
        use crate::cuda::instances::SOURCES;
        for inst in INSTANCES.iter().filter(|i| i.family == Family::Bwd) {
            let at = SOURCES.iter().position(|s| s.builds(inst)).expect("a kernel file builds it");
            // The Hopper main kernel has the dense entry only (packed batches run on sm_80).
            let mut names = vec![inst.name.to_string()];
            if inst.arch == Arch::Sm80 {
                names.push(format!("{}_varlen", inst.name));
            }
            if bwd_large_smem(inst) > 0 {
                names.extend([format!("{}_l", inst.name), format!("{}_l_varlen", inst.name)]);
            }
            for name in names {
                assert!(crate::cuda::has_entry(at, &name), "{name} is not in {}", SOURCES[at].file);
            }
        }
    }

    #[test]
    fn padded_rows_hold_whole_query_blocks() {
        // The kernels read and add whole query blocks of the padded workspaces.
        for inst in INSTANCES.iter().filter(|i| i.family == Family::Bwd) {
            assert!(SEQ_Q_PAD.is_multiple_of(inst.block_rows as usize), "{}", inst.name);
        }
    }
}
