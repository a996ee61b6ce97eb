//! Launches in thread-block clusters (compute capability 9.0): a grid whose consecutive blocks
//! form clusters of 2 or 4, co-scheduled on one GPU processing cluster, so that a block can
//! write into another's shared memory (distributed shared memory) and all can meet on the
//! cluster barrier. Used by the Hopper prefill's cluster split of small grids
//! (src/cuda/prefill_sm90.rs `pair_split`, kernels/fwd_sm90.cu).

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use candle_core::cuda_backend::WrapErr;
use candle_core::{bail, Result};

/// Launches `func(*param)` on `stream` with clusters of `size` blocks along x (blocks
/// size·c .. size·c + size - 1 form cluster c; `cfg.grid_dim.0` must be a multiple of `size`,
/// at most 8, the portable cluster size).
///
/// # Safety
/// As any kernel launch: `func` takes exactly one argument of type `P` by value, every pointer
/// in `param` is a live device allocation that the kernel may access as it does for the whole
/// time the stream runs it, and `cfg` is a grid the kernel indexes correctly as clusters of
/// `size`.
pub(super) unsafe fn launch_clusters<P: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    param: &P,
    size: u32,
) -> Result<()> {
    if !(1..=8).contains(&size) || !cfg.grid_dim.0.is_multiple_of(size) {
        bail!("fused-attn cuda internal: a grid of {} blocks along x does not form clusters of {size}", cfg.grid_dim.0)
    }
    stream.context().bind_to_thread().w()?;
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim.x = size;
    value.clusterDim.y = 1;
    value.clusterDim.z = 1;
    let mut attrs = [sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
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
            "fused-attn cuda: cuLaunchKernelEx (clusters of {size}, grid {:?}, block {:?}, {} bytes of shared \
             memory) failed with {res:?}",
            cfg.grid_dim,
            cfg.block_dim,
            cfg.shared_mem_bytes
        )
    }
    Ok(())
}
