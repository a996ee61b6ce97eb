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
use candle_core::Result;

use super::launch_ex::launch_with;

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
    // SAFETY: an all-zero CUlaunchAttributeValue is a valid value of the C union (plain data).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    // SAFETY: the caller guarantees what a launch and the programmatic serialization require
    // (see the function's safety section).
    unsafe { launch_with(stream, func, cfg, param, attr, "programmatic dependent launch") }
}
