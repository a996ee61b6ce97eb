//! Launches in thread-block clusters (compute capability 9.0): a grid whose consecutive blocks
//! form clusters (of two for the prefill's pair split), co-scheduled on one GPU processing
//! cluster, so that a block can write into another's shared memory (distributed shared
//! memory) and all can meet on the cluster barrier. Used by the Hopper prefill's cluster split of small grids
//! (src/cuda/prefill_sm90.rs `pair_split`, kernels/fwd_sm90.cu).

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use candle_core::{bail, Result};

use super::launch_ex::launch_with;

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
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim.x = size;
    value.clusterDim.y = 1;
    value.clusterDim.z = 1;
    let attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value,
    };
    // SAFETY: the caller guarantees what a launch in clusters of `size` requires (see the
    // function's safety section).
    unsafe { launch_with(stream, func, cfg, param, attr, &format!("clusters of {size}")) }
}
