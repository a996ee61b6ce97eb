//! Programmatic dependent launch (PDL, compute capability 9.0): a kernel launched with
//! programmatic stream serialization may be scheduled before the kernel ahead of it in the
//! stream has completed: as soon as every block of that kernel has exited (or triggered
//! `griddepcontrol.launch_dependents`, which ours never do). The dependent must run
//! `griddepcontrol.wait` before it reads anything the kernel ahead wrote; that wait returns
//! once the kernel ahead has completed and its writes are visible. What it saves is the gap
//! between two launches: the dependent's blocks are resident when the wait returns.
//!
//! Used by the decode's separate combine launch (src/cuda/decode.rs, kernels/decode_sm90.cu).

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use candle_core::cuda_backend::WrapErr;
use candle_core::{bail, Result};

/// Launches `func(*param)` on `stream` with programmatic stream serialization allowed, so that
/// it may start while the kernel launched just before it on `stream` finishes.
///
/// # Safety
/// As any kernel launch: `func` takes exactly one argument of type `P` by value, every pointer
/// in `param` is a live device allocation that the kernel may access as it does for the whole
/// time the stream runs it, and `cfg` is a grid the kernel indexes correctly. Besides, the
/// kernel runs `griddepcontrol.wait` before it reads anything the previous kernel on `stream`
/// writes, and the previous launch on `stream` is that kernel (no other work in between that
/// the dependent relies on).
pub(super) unsafe fn launch_dependent<P: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    param: &P,
) -> Result<()> {
    stream.context().bind_to_thread().w()?;
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attrs = [sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    }];
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    };
    let mut args = [param as *const P as *mut std::ffi::c_void];
    // SAFETY: `config` and `attrs` are live locals for the call; `args` holds one pointer to
    // `*param`, the kernel's one argument, which the driver copies before returning; the
    // caller guarantees the rest (see the function's safety section).
    let res = unsafe { sys::cuLaunchKernelEx(&config, func.cu_function(), args.as_mut_ptr(), std::ptr::null_mut()) };
    if res != sys::CUresult::CUDA_SUCCESS {
        bail!(
            "fused-attn cuda: cuLaunchKernelEx (programmatic dependent launch, grid {:?}, block {:?}) failed with \
             {res:?}",
            cfg.grid_dim,
            cfg.block_dim
        )
    }
    Ok(())
}
