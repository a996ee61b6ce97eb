//! The CUDA back end: launches the kernels of kernels/ on candle's stream. This file holds
//! the launch plumbing the kernel families share; one file per family launches it:
//!
//! * prefill.rs: kernels/fwd_sm80.cu, FlashAttention-2 on mma.sync (f16/bf16) and a plain-FMA
//!   f32 kernel with the same semantics;
//! * prefill_sm90.rs: kernels/fwd_sm90.cu, the Hopper forward (wgmma, TMA, warp
//!   specialization) for dense f16/bf16 problems on compute capability 9.0;
//! * decode.rs: kernels/decode_sm80.cu, split-key flash-decoding for few query rows, and on
//!   compute capability 9.0 kernels/decode_sm90.cu, its merge of the splits as a launch of its
//!   own (pdl.rs: a programmatic dependent launch);
//! * backward.rs: kernels/bwd_sm80.cu, the FlashAttention-2 backward (preprocess, main kernel
//!   on mma.sync for f16/bf16 and plain FMA for f32, convert);
//! * backward_sm90.rs: kernels/bwd_sm90.cu, the Hopper backward main kernel (wgmma, TMA) for
//!   dense f16/bf16 problems on compute capability 9.0, between backward.rs's preprocess and
//!   convert;
//! * tma.rs: the TMA descriptors both Hopper kernels load their tiles through;
//! * indices.rs: GPU-resident index tensors of packed and paged calls read to the host for
//!   their checks, all at once with one wait, on a stream of their own where cudarc orders
//!   streams by events (then without draining candle's).
//!
//! heuristics.rs decides which family, instance and split count run a problem, from device
//! facts it reads once per device. instances.rs declares every kernel file and instance once
//! and params.rs the FFI params struct with its field offsets; build.rs generates and checks
//! the C++ side from those two files. Kernels are looked up by a typed `KernelKey` whose dtype
//! comes from the Rust element type ([`KernelDtype`]). Every driver error becomes a candle
//! `Error`.
//!
//! Each kernel file is one module, loaded once per device from the fatbin build.rs embeds
//! (cubins for sm_80 and sm_90, compute_80 PTX): on every 8.x GPU (the sm_80 cubin runs
//! natively on 8.6 and 8.9) and on 9.0 nothing is JIT-compiled at run time, so the first call
//! of a family costs a module load, not a compile. Newer GPUs JIT the PTX once per process.

mod backward;
mod backward_sm90;
mod cluster;
mod decode;
mod heuristics;
pub(crate) mod indices;
mod instances;
mod lab_images;
mod launch_ex;
mod params;
mod pdl;
mod prefill;
mod prefill_sm90;
pub(crate) mod speculation;
mod tma;
mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop,
};
use candle_core::cuda_backend::cudarc::nvrtc::Ptx;
use candle_core::cuda_backend::{CudaDType, CudaDevice, DeviceId};
use candle_core::{bail, CudaStorage, DType, Layout, Result, Storage, Tensor};
use half::{bf16, f16};

use crate::problem::{Problem, SeqLayout, Strides};

pub(crate) use backward::backward;
use instances::{Dtype, Instance, SOURCES};
use params::FattnParams;

/// The generated tables: `FATBIN` and `CONTENTS` for loading, `ENTRIES` for the tests.
#[cfg_attr(not(test), allow(dead_code))]
mod fatbin {
    include!(concat!(env!("OUT_DIR"), "/fatbin.rs"));
}

/// The element types the kernels compute in, tied to the Rust type that holds them, so that
/// a launch's kernel and its buffers cannot disagree on the dtype.
pub(super) trait KernelDtype: CudaDType + DeviceRepr {
    const DTYPE: Dtype;
}
impl KernelDtype for f16 {
    const DTYPE: Dtype = Dtype::F16;
}
impl KernelDtype for bf16 {
    const DTYPE: Dtype = Dtype::BF16;
}
impl KernelDtype for f32 {
    const DTYPE: Dtype = Dtype::F32;
}

/// The modules of one candle device, by index in [`SOURCES`].
struct DeviceModules {
    /// The device's stream; when nothing holds it any more the device is gone.
    stream: Weak<CudaStream>,
    modules: Vec<Option<Arc<CudaModule>>>,
}

/// Per candle device (ids are never reused in a process), the kernel files loaded on it.
/// A module lives as long as its device: entries of dropped devices are removed (their
/// modules unloaded) at the next insertion.
static MODULES: Mutex<Option<HashMap<DeviceId, DeviceModules>>> = Mutex::new(None);

/// Runs `f` on the module table. Entries are inserted whole, so a lock poisoned by a panic
/// elsewhere holds nothing half-written and is used as is.
fn with_modules<R>(f: impl FnOnce(&mut HashMap<DeviceId, DeviceModules>) -> R) -> R {
    let mut guard = MODULES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// The module of kernel file `at` (index in [`SOURCES`]) on `dev`, loaded at its first use
/// on that device from the fatbin build.rs embedded: the driver takes the cubin of the
/// device's compute capability, and JIT-compiles the PTX fallback only on a GPU newer than
/// every cubin. Later calls are a lookup.
fn module(dev: &CudaDevice, at: usize) -> Result<Arc<CudaModule>> {
    let id = dev.id();
    if let Some(m) = with_modules(|table| table.get(&id).and_then(|d| d.modules[at].clone())) {
        return Ok(m);
    }
    let file = SOURCES[at].file;
    // The lab's image of this file (lab_images.rs), or the embedded fatbin.
    let (image, holds) = match lab_images::image(at)? {
        Some((bytes, label)) => (bytes, label),
        None => {
            let image = fatbin::FATBIN[at];
            if image.is_empty() {
                bail!("fused-attn cuda: {file} was built without code for any GPU ({})", fatbin::CONTENTS[at])
            }
            (image.to_vec(), format!("the build holds {}", fatbin::CONTENTS[at]))
        }
    };
    let stream = dev.cuda_stream();
    // Loaded outside the lock: a JIT of the PTX fallback takes seconds. Two threads may both
    // load a file once; the first insertion wins and the other module is dropped (unloaded).
    let loaded = stream.context().load_module(Ptx::from_binary(image)).map_err(|e| {
        candle_core::Error::Msg(format!("fused-attn cuda: cuModuleLoadData of {file} failed: {e} ({holds})"))
    })?;
    Ok(with_modules(|table| {
        if !table.contains_key(&id) {
            table.retain(|_, d| d.stream.strong_count() > 0);
        }
        let entry = table
            .entry(id)
            .or_insert_with(|| DeviceModules { stream: Arc::downgrade(&stream), modules: vec![None; SOURCES.len()] });
        entry.modules[at].get_or_insert(loaded).clone()
    }))
}

/// Lab only (examples/lab_stamps.rs): the bytes of the `__device__` variable `name` of kernel
/// file `file` (e.g. "kernels/fwd_sm90.cu") on `dev`, after the stream's work so far.
pub(crate) fn lab_read_global(dev: &CudaDevice, file: &str, name: &str) -> Result<Vec<u8>> {
    let Some(at) = SOURCES.iter().position(|s| s.file == file) else { bail!("fused-attn lab: no kernel file {file}") };
    let stream = dev.cuda_stream();
    let m = module(dev, at)?;
    let global = m
        .get_global(name, &stream)
        .map_err(|e| candle_core::Error::Msg(format!("fused-attn lab: cuModuleGetGlobal({name}) in {file}: {e}")))?;
    stream.clone_dtoh(&global).map_err(|e| candle_core::Error::Msg(format!("fused-attn lab: reading {name}: {e}")))
}

/// Whether kernel file `at` (index in [`SOURCES`]) was built with code for some GPU (a build
/// restricted by `FUSED_ATTN_CUDA_ARCHS` leaves an architecture-specific file empty).
pub(super) fn has_code(at: Option<usize>) -> bool {
    at.is_some_and(|at| !fatbin::FATBIN[at].is_empty())
}

/// Whether kernel file `at` (index in [`SOURCES`]) has the entry point `name`, from the PTX
/// build.rs assembled its cubins from.
#[cfg(test)]
pub(super) fn has_entry(at: usize, name: &str) -> bool {
    fatbin::ENTRIES[at].contains(&name)
}

/// Loads `inst` from the module of the kernel file that builds it ([`module`]): its dense
/// entry point, or with `entry` = [`Entry::Packed`] its packed one, `<name>_varlen` (forward,
/// decode and backward main-kernel instances have both).
pub(super) fn load_instance(dev: &CudaDevice, inst: &Instance, entry: Entry) -> Result<CudaFunction> {
    let Some(at) = SOURCES.iter().position(|s| s.builds(inst)) else {
        bail!("fused-attn cuda: {} has no kernel file (src/cuda/instances.rs)", inst.name)
    };
    let name = match entry {
        Entry::Dense => inst.name.to_string(),
        Entry::Packed => format!("{}_varlen", inst.name),
        Entry::DenseLarge => format!("{}_l", inst.name),
        Entry::PackedLarge => format!("{}_l_varlen", inst.name),
    };
    module(dev, at)?.load_function(&name).map_err(|e| {
        candle_core::Error::Msg(format!(
            "fused-attn cuda: cuModuleGetFunction({name}) in {} failed: {e}",
            SOURCES[at].file
        ))
    })
}

/// Which entry point of an instance: forward, decode and backward main-kernel instances compile the packed
/// (varlen/paged) kernel as a second entry, so that its registers do not change the dense
/// kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    Dense,
    Packed,
    /// The backward's large-smem tile (`<name>_l`, `<name>_l_varlen`; instances with
    /// `instances::bwd_large_smem` > 0), dense and packed.
    DenseLarge,
    PackedLarge,
}

impl Entry {
    /// The large-smem entry point of the same layout.
    pub fn large(self) -> Self {
        match self {
            Entry::Dense | Entry::DenseLarge => Entry::DenseLarge,
            Entry::Packed | Entry::PackedLarge => Entry::PackedLarge,
        }
    }

    pub fn is_large(self) -> bool {
        matches!(self, Entry::DenseLarge | Entry::PackedLarge)
    }

    pub fn of(p: &Problem) -> Self {
        if p.packed().is_some() {
            Entry::Packed
        } else {
            Entry::Dense
        }
    }
}

// SAFETY: `FattnParams` is `#[repr(C)]` plain data (integers and floats, no references) with
// the layout of the C++ struct, field by field (offsets asserted on both sides, see
// params.rs); the kernels receive it by value.
unsafe impl DeviceRepr for FattnParams {}

/// A `(batch, seq, heads, head_dim)` device tensor as a kernel reads it: the address of its
/// first element and its element strides. The guard keeps cudarc's stream bookkeeping
/// for the storage alive until the launch has been queued.
pub(super) struct DevTensor<'a> {
    pub ptr: u64,
    pub strides: Strides,
    _guard: SyncOnDrop<'a>,
}

impl DevTensor<'_> {
    /// True when every row starts on 16 bytes and rows hold whole 16-byte chunks.
    fn rows_16b_aligned(&self, head_dim: usize, elem_bytes: usize) -> bool {
        let s = &self.strides;
        let elems_16b = 16 / elem_bytes;
        self.ptr.is_multiple_of(16)
            && head_dim.is_multiple_of(elems_16b)
            && [s.batch, s.seq, s.head].iter().all(|x| x.is_multiple_of(elems_16b))
    }
}

/// Raw pointer (start offset applied) and strides of a storage of element type `T`.
pub(super) fn dev_tensor<'a, T: CudaDType + DeviceRepr + 'a>(
    storage: &'a CudaStorage,
    layout: &Layout,
    stream: &'a CudaStream,
) -> Result<DevTensor<'a>> {
    dev_tensor_with::<T>(storage, stream, Strides::from_layout(layout)?)
}

fn dev_tensor_with<'a, T: CudaDType + DeviceRepr + 'a>(
    storage: &'a CudaStorage,
    stream: &'a CudaStream,
    strides: Strides,
) -> Result<DevTensor<'a>> {
    let (base, guard) = storage.as_cuda_slice::<T>()?.device_ptr(stream);
    let ptr = base + (strides.offset * std::mem::size_of::<T>()) as u64;
    Ok(DevTensor { ptr, strides, _guard: guard })
}

/// The kernels' (batch, seq, head) strides of a packed tensor (kernels/common/kv_addr.cuh):
/// `(rows, heads, head_dim)` has batch stride 0 (a sequence's rows start at its cu_seqlens
/// entry); a paged cache's batch stride is its block stride: `(blocks, page, heads, head_dim)`
/// as it is, `(blocks · page, heads, head_dim)` with `page` rows per block.
fn packed_strides(layout: &Layout, page: Option<usize>, name: &str) -> Result<Strides> {
    let (s, dims) = (layout.stride(), layout.dims());
    let last = dims.len().saturating_sub(1);
    if dims.is_empty() || (dims[last] > 1 && s[last] != 1) {
        bail!("fused-attn cuda internal: {name} needs a contiguous head dim, got shape {dims:?} strides {s:?}")
    }
    let offset = layout.start_offset();
    Ok(match (dims.len(), page) {
        (3, None) => Strides { offset, batch: 0, seq: s[0], head: s[1] },
        (3, Some(page)) => Strides { offset, batch: s[0] * page, seq: s[0], head: s[1] },
        (4, Some(_)) => Strides { offset, batch: s[0], seq: s[1], head: s[2] },
        (rank, _) => bail!("fused-attn cuda internal: packed {name} of rank {rank}, shape {dims:?}"),
    })
}

/// q, k and v as the kernels read them, dense or packed (paged or not).
pub(super) fn dev_qkv<'a, T: CudaDType + DeviceRepr + 'a>(
    p: &Problem,
    (q, ql): (&'a CudaStorage, &Layout),
    (k, kl): (&'a CudaStorage, &Layout),
    (v, vl): (&'a CudaStorage, &Layout),
    stream: &'a CudaStream,
) -> Result<[DevTensor<'a>; 3]> {
    match &p.layout {
        SeqLayout::Dense => {
            Ok([dev_tensor::<T>(q, ql, stream)?, dev_tensor::<T>(k, kl, stream)?, dev_tensor::<T>(v, vl, stream)?])
        }
        SeqLayout::Packed(pk) => {
            let page = pk.pages.as_ref().map(|pg| pg.page_size);
            Ok([
                dev_tensor_with::<T>(q, stream, packed_strides(ql, None, "q")?)?,
                dev_tensor_with::<T>(k, stream, packed_strides(kl, page, "k")?)?,
                dev_tensor_with::<T>(v, stream, packed_strides(vl, page, "v")?)?,
            ])
        }
    }
}

/// Whether a prefill (either generation) takes its `_mods` instance: a softcap or ALiBi, a
/// scale ≤ 0 (the plain kernels fold the scale into exp2 after the row max, which needs it
/// positive), or a scale above [`crate::limits::PRESCALE_ABOVE_LOG2`] (the fold is exact only
/// while scaled scores stay far below 2^28; `_mods` scales each score first).
pub(super) fn prefill_needs_mods(p: &Problem) -> bool {
    p.softcap > 0.0
        || p.has_alibi
        || p.scale <= 0.0
        || p.scale * std::f32::consts::LOG2_E > crate::limits::PRESCALE_ABOVE_LOG2
}

/// Rows of q (and of the output): `batch · seq_q` dense, `total_q` packed.
pub(super) fn query_rows(p: &Problem) -> usize {
    p.packed().map_or(p.batch * p.seq_q, |pk| pk.total_q())
}

/// The packed-batch fields of [`FattnParams`] (all zero when dense).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PackedArgs {
    cu_seqlens_q: u64,
    cu_seqlens_k: u64,
    block_table: u64,
    block_table_batch_stride: i64,
    page_block_size: i32,
    mm_ranges: u64,
    max_mm_ranges: i32,
}

impl PackedArgs {
    /// `params` with these fields set.
    pub fn apply(&self, params: FattnParams) -> FattnParams {
        FattnParams {
            cu_seqlens_q: self.cu_seqlens_q,
            cu_seqlens_k: self.cu_seqlens_k,
            block_table: self.block_table,
            block_table_batch_stride: self.block_table_batch_stride,
            page_block_size: self.page_block_size,
            mm_ranges: self.mm_ranges,
            max_mm_ranges: self.max_mm_ranges,
            ..params
        }
    }
}

/// Device address of a contiguous i32 index tensor on q's device; the guard must live until
/// the launch is enqueued.
fn i32_ptr<'a>(storage: &'a Storage, layout: &Layout, stream: &'a CudaStream) -> Result<(u64, SyncOnDrop<'a>)> {
    match storage {
        Storage::Cuda(s) => {
            let (base, guard) = s.as_cuda_slice::<i32>()?.device_ptr(stream);
            Ok((base + (layout.start_offset() * 4) as u64, guard))
        }
        _ => bail!("fused-attn cuda internal: a packed index tensor is not on q's CUDA device"),
    }
}

/// Calls `f` with the packed batch's index arrays (`problem.packed().device`, the checked i32
/// copies on q's device; never the caller's tensors), kept alive and ordered on `stream`
/// until `f` returns (it enqueues the launch). Dense problems get zeros.
pub(super) fn with_packed<R>(p: &Problem, stream: &CudaStream, f: impl FnOnce(&PackedArgs) -> Result<R>) -> Result<R> {
    let Some(pk) = p.packed() else { return f(&PackedArgs::default()) };
    let t = &pk.device;
    let (cu_q, cu_k) = (t.cu_q.storage_and_layout(), t.cu_k.storage_and_layout());
    let table = t.block_table.as_ref().map(|x| x.storage_and_layout());
    let ranges = t.ranges.as_ref().map(|x| x.storage_and_layout());
    let (cu_q_ptr, _g0) = i32_ptr(&cu_q.0, cu_q.1, stream)?;
    let (cu_k_ptr, _g1) = i32_ptr(&cu_k.0, cu_k.1, stream)?;
    let table_ptr = table.as_ref().map(|(s, l)| i32_ptr(s, l, stream)).transpose()?;
    let ranges_ptr = ranges.as_ref().map(|(s, l)| i32_ptr(s, l, stream)).transpose()?;
    let args = PackedArgs {
        cu_seqlens_q: cu_q_ptr,
        cu_seqlens_k: cu_k_ptr,
        block_table: table_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
        block_table_batch_stride: pk.pages.as_ref().map_or(0, |pg| to_i64(pg.max_blocks)),
        page_block_size: match &pk.pages {
            Some(pg) => to_i32(pg.page_size, "page_block_size")?,
            None => 0,
        },
        mm_ranges: ranges_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
        max_mm_ranges: if ranges_ptr.is_some() { to_i32(pk.max_ranges, "max mm ranges")? } else { 0 },
    };
    // The kernels compute row and key indices in i32: total rows and key counts must fit.
    to_i32(pk.total_q(), "total_q")?;
    if let Some(pg) = &pk.pages {
        to_i32(pg.num_blocks, "num_blocks")?;
    }
    f(&args)
}

/// Raw pointer (start offset applied) of the `(batch, heads)` f32 ALiBi slopes; the guard
/// must live until the launch is enqueued.
pub(super) fn alibi_slopes_ptr<'a>(
    storage: &'a Storage,
    layout: &Layout,
    stream: &'a CudaStream,
) -> Result<(u64, SyncOnDrop<'a>)> {
    match storage {
        Storage::Cuda(s) => {
            let (base, guard) = s.as_cuda_slice::<f32>()?.device_ptr(stream);
            Ok((base + (layout.start_offset() * std::mem::size_of::<f32>()) as u64, guard))
        }
        _ => bail!("fused-attn cuda: alibi_slopes must be on q's CUDA device"),
    }
}

/// `x` as the i32 a kernel takes, or an error naming the quantity.
pub(super) fn to_i32(x: usize, what: &str) -> Result<i32> {
    match i32::try_from(x) {
        Ok(v) => Ok(v),
        Err(_) => bail!("fused-attn cuda: {what} = {x} exceeds the kernels' i32 range"),
    }
}

fn to_i64(x: usize) -> i64 {
    // Strides of an allocation that exists always fit in i64.
    x as i64
}

/// The CUDA forward: the output, and the `(batch, heads, seq_q)` f32 log-sum-exp when
/// `problem.want_lse` (packed: output `(total_q, heads, head_dim)`, LSE `(heads, total_q)`).
/// `alibi` is `(batch, heads)` f32, contiguous, on q's device.
pub(crate) fn forward(
    problem: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<(CudaStorage, Option<CudaStorage>)> {
    let (out, lse) = match q.0.dtype() {
        DType::F16 => forward_typed::<f16>(problem, q, k, v, alibi, None)?,
        DType::BF16 => forward_typed::<bf16>(problem, q, k, v, alibi, None)?,
        DType::F32 => forward_typed::<f32>(problem, q, k, v, alibi, None)?,
        dt => bail!("fused-attn cuda: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    };
    match out {
        Some(out) => Ok((out, lse)),
        None => bail!("fused-attn cuda internal: the forward returned no output"),
    }
}

/// The forward written into the caller's `out` (`attention_varlen_into`): `(total_q, heads,
/// head_dim)` in q's dtype, contiguous, sharing no storage with q, k or v (checked by the
/// caller). The kernels store straight into it when it starts 16-byte aligned (every kernel's
/// vector stores); otherwise the forward runs into a fresh buffer and one device-to-device copy
/// on candle's stream moves it into `out`.
pub(crate) fn forward_into(
    problem: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
    (out, ol): (&mut CudaStorage, &Layout),
) -> Result<()> {
    if problem.want_lse {
        bail!("fused-attn cuda internal: a forward into a caller's output keeps no log-sum-exp")
    }
    let dtype = q.0.dtype();
    if out.dtype() != dtype {
        bail!("fused-attn cuda internal: out is {:?}, q is {dtype:?}", out.dtype())
    }
    let n = query_rows(problem) * problem.heads * problem.head_dim;
    match dtype {
        DType::F16 => forward_into_t::<f16>(problem, q, k, v, alibi, out, ol, n),
        DType::BF16 => forward_into_t::<bf16>(problem, q, k, v, alibi, out, ol, n),
        DType::F32 => forward_into_t::<f32>(problem, q, k, v, alibi, out, ol, n),
        dt => bail!("fused-attn cuda: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    }
}

#[allow(clippy::too_many_arguments)]
fn forward_into_t<T: KernelDtype>(
    p: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
    out: &mut CudaStorage,
    ol: &Layout,
    n: usize,
) -> Result<()> {
    let dev = out.device.clone();
    let stream = dev.cuda_stream();
    let start = ol.start_offset();
    let slice = out.as_cuda_slice_mut::<T>()?;
    if start + n > slice.len() {
        bail!("fused-attn cuda internal: out's {n} elements from {start} exceed its buffer of {}", slice.len())
    }
    let aligned = {
        let (base, _guard) = slice.device_ptr(&stream);
        (base + (start * std::mem::size_of::<T>()) as u64).is_multiple_of(16)
    };
    let mut view = slice.slice_mut(start..start + n);
    if !aligned {
        let (fresh, _) = forward_typed::<T>(p, q, k, v, alibi, None)?;
        let Some(fresh) = fresh else { bail!("fused-attn cuda internal: no output from a fresh forward") };
        let src = fresh.as_cuda_slice::<T>()?;
        stream
            .memcpy_dtod(&src.slice(0..n), &mut view)
            .map_err(|e| candle_core::Error::Msg(format!("fused-attn cuda: copying the output into out: {e:?}")))?;
        return Ok(());
    }
    let (fresh, _) = forward_typed::<T>(p, q, k, v, alibi, Some(view))?;
    if fresh.is_some() {
        bail!("fused-attn cuda internal: the forward into out returned a buffer of its own")
    }
    Ok(())
}

/// The prefill or decode forward in `T`, into `caller` when given (then no output is returned).
fn forward_typed<T: KernelDtype>(
    p: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
    caller: Option<CudaViewMut<'_, T>>,
) -> Result<(Option<CudaStorage>, Option<CudaStorage>)> {
    if heuristics::use_decode(p, T::DTYPE) {
        decode::forward::<T>(p, q, k, v, alibi, caller)
    } else {
        prefill::forward::<T>(p, q, k, v, alibi, caller)
    }
}

/// A launcher's output: a fresh buffer that it returns, or a view of the caller's
/// (`attention_varlen_into`).
pub(super) enum OutBuf<'a, T> {
    Fresh(CudaSlice<T>),
    Caller(CudaViewMut<'a, T>),
}

impl<'a, T: CudaDType + DeviceRepr> OutBuf<'a, T> {
    /// `n` elements: `caller` (exactly `n` long) when given, else a fresh allocation.
    ///
    /// # Safety
    /// A fresh buffer is not initialized: the launcher's kernel must write every element.
    pub(super) unsafe fn new(dev: &CudaDevice, n: usize, caller: Option<CudaViewMut<'a, T>>) -> Result<Self> {
        match caller {
            Some(view) => {
                if view.len() != n {
                    bail!(
                        "fused-attn cuda internal: the caller's output holds {} elements, the forward {n}",
                        view.len()
                    )
                }
                Ok(Self::Caller(view))
            }
            // SAFETY: the caller's contract (every element written before any read).
            None => Ok(Self::Fresh(unsafe { dev.alloc::<T>(n) }?)),
        }
    }

    /// The device address to write to, ordered on `stream` (see cudarc's `DevicePtrMut`).
    pub(super) fn device_ptr_mut<'b>(&'b mut self, stream: &'b CudaStream) -> (u64, SyncOnDrop<'b>) {
        match self {
            Self::Fresh(s) => s.device_ptr_mut(stream),
            Self::Caller(v) => v.device_ptr_mut(stream),
        }
    }

    /// The fresh buffer as a candle storage; `None` for the caller's.
    pub(super) fn into_storage(self, dev: &CudaDevice) -> Option<CudaStorage> {
        match self {
            Self::Fresh(s) => Some(CudaStorage::wrap_cuda_slice(s, dev.clone())),
            Self::Caller(_) => None,
        }
    }
}

/// A normalized window (`-1` = unbounded) as the i32 the kernels take.
fn window_i32(w: i64, what: &str) -> Result<i32> {
    match i32::try_from(w) {
        Ok(v) => Ok(v),
        Err(_) => bail!("fused-attn cuda: {what} = {w} exceeds the kernels' i32 range"),
    }
}

/// The fields every kernel reads, for the dense `(batch, seq, heads, head_dim)` problem `p`
/// with output `o` (contiguous) and ALiBi slopes at `alibi` (0 = none); the rest zero.
pub(super) fn common_params(
    p: &Problem,
    [q, k, v]: [&DevTensor<'_>; 3],
    o: u64,
    alibi: u64,
    elem_bytes: usize,
) -> Result<FattnParams> {
    let d = p.head_dim;
    if p.window_right >= 0 {
        // The kernels compute a row's last visible key, diag + window_right, in i32.
        to_i32(p.seq_k + p.window_right as usize, "seq_k + window_size_right")?;
    }
    Ok(FattnParams {
        q: q.ptr,
        k: k.ptr,
        v: v.ptr,
        o,
        alibi_slopes: alibi,
        q_batch_stride: to_i64(q.strides.batch),
        q_seq_stride: to_i64(q.strides.seq),
        q_head_stride: to_i64(q.strides.head),
        k_batch_stride: to_i64(k.strides.batch),
        k_seq_stride: to_i64(k.strides.seq),
        k_head_stride: to_i64(k.strides.head),
        v_batch_stride: to_i64(v.strides.batch),
        v_seq_stride: to_i64(v.strides.seq),
        v_head_stride: to_i64(v.strides.head),
        // Packed outputs are (total_q, heads, head_dim): a sequence starts at its cu_seqlens_q row.
        o_batch_stride: if p.packed().is_some() { 0 } else { to_i64(p.seq_q * p.heads * d) },
        o_seq_stride: to_i64(p.heads * d),
        o_head_stride: to_i64(d),
        batch: to_i32(p.batch, "batch")?,
        heads: to_i32(p.heads, "heads")?,
        kv_heads: to_i32(p.kv_heads, "kv_heads")?,
        seq_q: to_i32(p.seq_q, "seq_q")?,
        seq_k: to_i32(p.seq_k, "seq_k")?,
        head_dim: to_i32(d, "head_dim")?,
        kv_group: to_i32(p.group_size(), "heads / kv_heads")?,
        window_left: window_i32(p.window_left, "window_size_left")?,
        window_right: window_i32(p.window_right, "window_size_right")?,
        vec_in: [q, k, v].iter().all(|t| t.rows_16b_aligned(d, elem_bytes)) as i32,
        scale_log2: p.scale * std::f32::consts::LOG2_E,
        softcap_inv_scaled: if p.softcap > 0.0 { p.scale / p.softcap } else { 0.0 },
        softcap_log2: if p.softcap > 0.0 { p.softcap * std::f32::consts::LOG2_E } else { 0.0 },
        scale: p.scale,
        softcap: p.softcap,
        ..FattnParams::default()
    })
}

#[cfg(test)]
mod tests {
    use super::instances::{Family, INSTANCES};
    use super::*;

    #[test]
    fn every_instance_entry_point_is_in_its_kernel_file() {
        // load_instance asks the module for these names; a missing one would fail only on a
        // GPU, at the first call that picks it. The packed entry where the family has one.
        for inst in INSTANCES {
            let at = SOURCES.iter().position(|s| s.builds(inst)).expect("a kernel file builds it");
            if !has_code(Some(at)) {
                // FUSED_ATTN_CUDA_ARCHS left this architecture out: nothing can load it.
                continue;
            }
            let mut names = vec![inst.name.to_string()];
            // Every forward, decode and backward main-kernel instance has a packed entry too,
            // except the Hopper backward (packed batches run on the sm_80 one).
            let packed = match inst.family {
                Family::Fwd | Family::Decode | Family::DecodeCombine => true,
                Family::Bwd => inst.arch == instances::Arch::Sm80,
                Family::BwdPreprocess | Family::BwdConvert => false,
            };
            if packed {
                names.push(format!("{}_varlen", inst.name));
            }
            for name in names {
                assert!(has_entry(at, &name), "{name} is not in {}", SOURCES[at].file);
            }
        }
    }

    #[test]
    fn every_kernel_file_ships_machine_code_and_a_ptx_fallback() {
        // The build this test runs in is the one that ships: its fatbins are not empty and
        // hold what instances::Arch asks for (build.rs wrote CONTENTS from the same lists).
        for (at, src) in SOURCES.iter().enumerate() {
            if !src.arch.ptx_fallback() && fatbin::CONTENTS[at].contains("FUSED_ATTN_CUDA_ARCHS") {
                // An architecture-specific file (no PTX) that the restriction left empty.
                continue;
            }
            assert!(!fatbin::FATBIN[at].is_empty(), "{}: empty fatbin", src.file);
            // The fatbin container's magic number (fatbinary's header, little-endian).
            assert_eq!(&fatbin::FATBIN[at][..4], &0xBA55_ED50u32.to_le_bytes(), "{}: not a fatbin", src.file);
            let contents = fatbin::CONTENTS[at];
            for sm in src.arch.sass() {
                assert!(
                    contents.contains(sm) || contents.contains("FUSED_ATTN_CUDA_ARCHS"),
                    "{}: no {sm} cubin ({contents})",
                    src.file
                );
            }
            if src.arch.ptx_fallback() {
                assert!(contents.contains(&format!("{} PTX", src.arch.virtual_arch())), "{}: {contents}", src.file);
            }
        }
    }
}
