//! One kernel launch with one launch attribute (`cuLaunchKernelEx`), which cudarc's launch
//! builder does not take: programmatic dependent launch (src/cuda/pdl.rs) and thread-block
//! clusters (src/cuda/cluster.rs) build their attribute and launch through here.

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use candle_core::cuda_backend::WrapErr;
use candle_core::{bail, Result};

/// Launches `func(*param)` on `stream` with `attr`; `what` names the attribute in the error.
///
/// # Safety
/// As any kernel launch: `func` takes exactly one argument of type `P` by value, every pointer
/// in `param` is a live device allocation that the kernel may access as it does for the whole
/// time the stream runs it, and `cfg` is a grid the kernel indexes correctly; besides, whatever
/// `attr` requires of the kernel (see the callers).
pub(super) unsafe fn launch_with<P: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    param: &P,
    attr: sys::CUlaunchAttribute,
    what: &str,
) -> Result<()> {
    stream.context().bind_to_thread().w()?;
    let mut attrs = [attr];
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
            "fused-attn cuda: cuLaunchKernelEx ({what}, grid {:?}, block {:?}, {} bytes of shared memory) failed \
             with {res:?}",
            cfg.grid_dim,
            cfg.block_dim,
            cfg.shared_mem_bytes
        )
    }
    Ok(())
}
