//! CUDA forward: launches the kernels of kernels/ on candle's stream.
//!
//! * f16/bf16: the tensor-core FlashAttention-2 kernel (kernels/fwd_sm80.cu), one instance
//!   per head dim in src/cuda/instances.rs; other head dims run on the next larger instance,
//!   zero-padded inside the kernel.
//! * f32: a plain-FMA kernel with the same semantics (no TF32: its error stays at the level
//!   of candle's f32 matmul, which runs without TF32 by default).
//! * Few query rows against a long KV cache go to the split-K decode kernel (`decode`).
//!
//! Kernels are looked up by a typed [`KernelKey`] whose dtype comes from the Rust element type
//! ([`KernelDtype`]). The parameters cross the FFI boundary as one `#[repr(C)]` struct,
//! [`FattnParams`] (params.rs), whose layout both sides assert field by field. Every driver
//! error becomes a candle `Error`.
//!
//! Shared with `decode`: [`dev_tensor`] (raw pointer + strides from storage and layout),
//! [`common_params`], [`load_instance`], [`set_dynamic_smem`], [`to_i32`].

mod decode;
mod heuristics;
mod instances;
mod params;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg, SyncOnDrop,
};
use candle_core::cuda_backend::{CudaDType, CudaDevice, WrapErr};
use candle_core::{bail, CudaStorage, DType, Layout, Result, Storage, Tensor};
use half::{bf16, f16};

use crate::problem::{Problem, Strides};
use instances::{Arch, Dtype, Family, Instance, KernelKey, SOURCES};
use params::FattnParams;

mod ptx {
    include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
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

/// The kernel dtype of a candle dtype, if a kernel exists for it.
pub(super) fn kernel_dtype(dtype: DType) -> Option<Dtype> {
    match dtype {
        DType::F16 => Some(Dtype::F16),
        DType::BF16 => Some(Dtype::BF16),
        DType::F32 => Some(Dtype::F32),
        _ => None,
    }
}

/// Loads `inst` from the PTX of the kernel file that builds it (compiled by build.rs, cached
/// by candle under the file's module name).
pub(super) fn load_instance(dev: &CudaDevice, inst: &Instance) -> Result<CudaFunction> {
    let Some(at) = SOURCES.iter().position(|s| s.family == inst.family && s.arch == inst.arch) else {
        bail!("fused-attn cuda: {} has no kernel file (src/cuda/instances.rs)", inst.name)
    };
    Ok(dev.get_or_load_custom_func(inst.name, SOURCES[at].module, ptx::PTX[at])?.into_cuda_function())
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
    let strides = Strides::from_layout(layout)?;
    let (base, guard) = storage.as_cuda_slice::<T>()?.device_ptr(stream);
    let ptr = base + (strides.offset * std::mem::size_of::<T>()) as u64;
    Ok(DevTensor { ptr, strides, _guard: guard })
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

/// Lets `func` use `bytes` of dynamic shared memory (above 48 KiB this must be opted into),
/// or errors when the device has less.
pub(super) fn set_dynamic_smem(func: &CudaFunction, stream: &CudaStream, bytes: u32, name: &str) -> Result<()> {
    let optin =
        stream.context().attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).w()?;
    if bytes as i64 > optin as i64 {
        bail!("fused-attn cuda: {name} needs {bytes} bytes of shared memory, the device allows {optin}")
    }
    func.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32).w()
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

/// The CUDA forward. `alibi` is `(batch, heads)` f32, contiguous, on q's device.
pub(crate) fn forward(
    problem: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    (k, kl): (&CudaStorage, &Layout),
    (v, vl): (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<CudaStorage> {
    let dtype = q.dtype();
    if decode::applies(problem, dtype) {
        return decode::forward(problem, (q, ql), (k, kl), (v, vl), alibi);
    }
    match dtype {
        DType::F16 => launch_fwd::<f16>(problem, (q, ql), (k, kl), (v, vl), alibi),
        DType::BF16 => launch_fwd::<bf16>(problem, (q, ql), (k, kl), (v, vl), alibi),
        DType::F32 => launch_fwd::<f32>(problem, (q, ql), (k, kl), (v, vl), alibi),
        dt => bail!("fused-attn cuda: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    }
}

/// The prefill instance for `p` in `T`. `_mods` instances apply softcap/ALiBi; the plain ones
/// fold the scale into exp2 after the row max, which needs a positive scale, so a scale <= 0
/// takes `_mods` too (the f32 kernel serves both).
fn fwd_instance<T: KernelDtype>(p: &Problem) -> Result<&'static Instance> {
    let mods = p.softcap > 0.0 || p.has_alibi || p.scale <= 0.0;
    heuristics::instance(KernelKey { family: Family::Fwd, dtype: T::DTYPE, head_dim: p.head_dim, mods }, Arch::Sm80)
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
        o_batch_stride: to_i64(p.seq_q * p.heads * d),
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

fn launch_fwd<T: KernelDtype>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    (k, kl): (&CudaStorage, &Layout),
    (v, vl): (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<CudaStorage> {
    let dev = &q.device;
    let stream = dev.cuda_stream();
    let inst = fwd_instance::<T>(p)?;
    let (major, minor) = stream.context().compute_capability().w()?;
    let (need_major, need_minor) = inst.arch.min_compute_capability();
    if (major, minor) < (need_major, need_minor) {
        bail!(
            "fused-attn cuda: the kernels need compute capability {need_major}.{need_minor} or newer, this device has \
             {major}.{minor}"
        )
    }
    let (threads, block_m) = (inst.threads, inst.block_rows);
    let smem_bytes = inst.smem_bytes(to_i32(p.head_dim, "head_dim")? as u32);
    let func = load_instance(dev, inst)?;
    set_dynamic_smem(&func, &stream, smem_bytes, inst.name)?;

    let elem = std::mem::size_of::<T>();
    let (qt, kt, vt) =
        (dev_tensor::<T>(q, ql, &stream)?, dev_tensor::<T>(k, kl, &stream)?, dev_tensor::<T>(v, vl, &stream)?);
    let out_len = p.batch * p.seq_q * p.heads * p.head_dim;
    // SAFETY: the kernel writes every element of the (batch, seq_q, heads, head_dim) output:
    // the grid covers every (batch, head, query block), and each block stores all its rows
    // below seq_q and all columns below head_dim, zeros for rows that see no key.
    let mut out = unsafe { dev.alloc::<T>(out_len) }?;

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    // One CTA per (batch, head, query block), in a 1-D grid (see `query_block` in the kernel).
    let query_blocks = p.seq_q.div_ceil(block_m as usize);
    let grid_x = to_i32(p.batch * p.heads * query_blocks, "batch · heads · query blocks")? as u32;
    {
        let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
        let params = FattnParams {
            vec_out: (o_ptr.is_multiple_of(16) && p.head_dim.is_multiple_of(16 / elem)) as i32,
            ..common_params(p, [&qt, &kt, &vt], o_ptr, alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr), elem)?
        };
        let cfg = LaunchConfig { grid_dim: (grid_x, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem_bytes };
        let mut builder = stream.launch_builder(&func);
        builder.arg(&params);
        // SAFETY: the kernel's one argument is `FattnParams` by value, matching its C++
        // signature. Its pointers are live device allocations held by `q`, `k`, `v`, `out`
        // and the alibi storage for the whole call, and the strides and sizes describe them
        // (validated by `crate::problem::validate`); the kernel reads only inside those bounds.
        unsafe { builder.launch(cfg) }.w()?;
    }
    drop(alibi_ptr);
    drop((qt, kt, vt));
    Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
}
