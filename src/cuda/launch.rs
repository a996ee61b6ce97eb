//! Launches with attributes (`cuLaunchKernelEx`), both compute capability 9.0 features of the
//! decode (src/cuda/decode.rs):
//!
//! * Programmatic dependent launch (PDL): a kernel launched with programmatic stream
//!   serialization may be scheduled before the kernel ahead of it in the stream has
//!   completed: as soon as every block of that kernel has exited (or triggered
//!   `griddepcontrol.launch_dependents`, which ours never do). The dependent must run
//!   `griddepcontrol.wait` before it reads anything the kernel ahead wrote; that wait returns
//!   once the kernel ahead has completed and its writes are visible. What it saves is the gap
//!   between two launches: the dependent's blocks are resident when the wait returns. The
//!   decode's separate combine launch (kernels/decode_sm90.cu) runs so.
//! * Thread block clusters: the blocks of one cluster are co-scheduled on one GPC and can read
//!   each other's shared memory. The cluster split kernels (kernels/decode_sm90.cu) merge a
//!   tile's splits so. Above 8 blocks a cluster size is "non-portable": the function must allow
//!   it, and whether such clusters fit depends on the GPU (`max_active_clusters`).

use std::collections::HashMap;
use std::sync::Mutex;

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use candle_core::cuda_backend::WrapErr;
use candle_core::{bail, Result};

/// The most blocks a cluster may have on compute capability 9.0 (8 portably).
pub(super) const MAX_CLUSTER_BLOCKS: u32 = 16;

/// The driver's launch configuration of `cfg` on `stream` with `attrs`.
fn launch_config(stream: &CudaStream, cfg: &LaunchConfig, attrs: &mut [sys::CUlaunchAttribute]) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
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
    }
}

/// The attributes of a cluster launch: clusters of `blocks` blocks along grid x, spread over
/// the SMs of their GPC. (The default policy packs a cluster's blocks onto as few SMs as their
/// shared memory allows: two decode blocks per SM, so a grid of one block per SM streamed from
/// half the SMs; session 22, lab/README.md.)
fn cluster_attributes(blocks: u32) -> [sys::CUlaunchAttribute; 2] {
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut dim: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    dim.clusterDim.x = blocks;
    dim.clusterDim.y = 1;
    dim.clusterDim.z = 1;
    // SAFETY: as above.
    let mut policy: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    policy.clusterSchedulingPolicyPreference = sys::CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    [
        sys::CUlaunchAttribute { id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, pad: [0; 4], value: dim },
        sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
            pad: [0; 4],
            value: policy,
        },
    ]
}

/// `func(*param)` launched on `stream` with `attrs`; `what` names the launch in the error.
///
/// # Safety
/// As any kernel launch: `func` takes exactly one argument of type `P` by value, every pointer
/// in `param` is a live device allocation that the kernel may access as it does for the whole
/// time the stream runs it, `cfg` is a grid the kernel indexes correctly, and `attrs` are
/// attributes the kernel is written for.
unsafe fn launch_with<P: DeviceRepr, const N: usize>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    mut attrs: [sys::CUlaunchAttribute; N],
    param: &P,
    what: &str,
) -> Result<()> {
    stream.context().bind_to_thread().w()?;
    let config = launch_config(stream, &cfg, &mut attrs);
    let mut args = [param as *const P as *mut std::ffi::c_void];
    // SAFETY: `config` and `attrs` are live locals for the call; `args` holds one pointer to
    // `*param`, the kernel's one argument, which the driver copies before returning; the
    // caller guarantees the rest (see the function's safety section).
    let res = unsafe { sys::cuLaunchKernelEx(&config, func.cu_function(), args.as_mut_ptr(), std::ptr::null_mut()) };
    if res != sys::CUresult::CUDA_SUCCESS {
        bail!(
            "fused-attn cuda: cuLaunchKernelEx ({what}, grid {:?}, block {:?}, {} bytes of shared memory) failed with \
             {res:?}",
            cfg.grid_dim,
            cfg.block_dim,
            cfg.shared_mem_bytes
        )
    }
    Ok(())
}

/// Launches `func(*param)` on `stream` with programmatic stream serialization allowed, so that
/// it may start while the kernel launched just before it on `stream` finishes.
///
/// # Safety
/// As [`launch_with`]. Besides, the kernel runs `griddepcontrol.wait` before it reads anything
/// the previous kernel on `stream` writes, and the previous launch on `stream` is that kernel
/// (no other work in between that the dependent relies on).
pub(super) unsafe fn launch_dependent<P: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    param: &P,
) -> Result<()> {
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    // SAFETY: the caller's guarantees (this function's safety section).
    unsafe { launch_with(stream, func, cfg, [attr], param, "programmatic dependent launch") }
}

/// Launches `func(*param)` on `stream` in clusters of `blocks` blocks along grid x
/// (`cfg.grid_dim.0` a multiple of it; [`max_active_clusters`] said at least one fits).
///
/// # Safety
/// As [`launch_with`]; besides, the kernel is written for clusters of `blocks` along x.
pub(super) unsafe fn launch_cluster<P: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    blocks: u32,
    param: &P,
) -> Result<()> {
    if blocks == 0 || blocks > MAX_CLUSTER_BLOCKS || cfg.grid_dim.0 % blocks != 0 {
        bail!(
            "fused-attn cuda: clusters of {blocks} blocks along x do not tile grid {:?} (at most {MAX_CLUSTER_BLOCKS})",
            cfg.grid_dim
        )
    }
    // SAFETY: the caller's guarantees (this function's safety section); the cluster tiles the grid.
    unsafe { launch_with(stream, func, cfg, cluster_attributes(blocks), param, "thread block clusters") }
}

/// How many clusters of `blocks` blocks of `func` (`threads` threads and `smem` bytes of
/// dynamic shared memory each) the device holds at once: 0 when none fits (a launch would
/// fail). Allows the function non-portable sizes (above 8) first. Read once per function,
/// size and shared memory, then cached.
pub(super) fn max_active_clusters(
    stream: &CudaStream,
    func: &CudaFunction,
    blocks: u32,
    threads: u32,
    smem: u32,
) -> Result<u32> {
    static KNOWN: Mutex<Option<HashMap<(usize, u32, u32, u32), u32>>> = Mutex::new(None);
    let key = (func.cu_function() as usize, blocks, threads, smem);
    let known = |f: &mut dyn FnMut(&mut HashMap<(usize, u32, u32, u32), u32>)| {
        let mut guard = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
        f(guard.get_or_insert_with(HashMap::new))
    };
    let mut hit = None;
    known(&mut |m| hit = m.get(&key).copied());
    if let Some(n) = hit {
        return Ok(n);
    }
    if blocks == 0 || blocks > MAX_CLUSTER_BLOCKS {
        return Ok(0);
    }
    stream.context().bind_to_thread().w()?;
    if blocks > 8 {
        // SAFETY: a valid function handle of a loaded module, a documented attribute and value.
        let res = unsafe {
            sys::cuFuncSetAttribute(
                func.cu_function(),
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
        };
        if res != sys::CUresult::CUDA_SUCCESS {
            bail!("fused-attn cuda: allowing clusters of {blocks} blocks (cuFuncSetAttribute) failed with {res:?}")
        }
    }
    let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
    let mut attrs = cluster_attributes(blocks);
    let config = launch_config(stream, &cfg, &mut attrs);
    let mut n: std::ffi::c_int = 0;
    // SAFETY: `n`, `config` and `attrs` are live locals for the call; the handle is valid.
    let res = unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.cu_function(), &config) };
    if res != sys::CUresult::CUDA_SUCCESS {
        bail!(
            "fused-attn cuda: cuOccupancyMaxActiveClusters (clusters of {blocks} blocks of {threads} threads, {smem} \
             bytes of shared memory) failed with {res:?}"
        )
    }
    let n = n.max(0) as u32;
    known(&mut |m| {
        m.insert(key, n);
    });
    Ok(n)
}
