//! The Hopper backward main kernel: kernels/bwd_sm90.cu (wgmma, TMA, a producer warpgroup and
//! two consumer warpgroups) for the dense f16/bf16 problems it covers, on compute capability
//! 9.0. backward.rs runs the preprocess and convert kernels around it as around the sm_80 main
//! kernel, with the same workspaces; [`plan`] returns `None` for everything else, which then
//! runs on the sm_80 main kernel:
//!
//! * packed (varlen) batches, f32, head dims above 128 or not a multiple of 8;
//! * layouts a tensor map cannot describe (a start address not on 16 bytes, a row/head/batch
//!   stride that is not a whole number of 16 bytes);
//! * `FUSED_ATTN_CUDA_KERNELS=sm80` or [`crate::with_cuda_kernels`] with `Sm80`;
//! * a build without sm_90a code (`FUSED_ATTN_CUDA_ARCHS`).
//!
//! The tensor maps are made per call from the real strides, so views run in place.

use candle_core::cuda_backend::cudarc::driver::DeviceRepr;
use candle_core::{CudaDevice, Result};

use super::instances::{Arch, Dtype, Family, Instance, KernelKey, SOURCES};
use super::params::{FattnBwdParams, FattnHopperBwdParams, TmaDesc};
use super::tma::tensor_map;
use super::{heuristics, DevTensor, KernelDtype};
use crate::cuda_kernels::{cuda_kernels, CudaKernels};
use crate::problem::Problem;

// SAFETY: `FattnHopperBwdParams` is `#[repr(C)]` plain data (integers, floats and the opaque
// 128-byte tensor maps, no references) with the layout of the C++ struct, field by field
// (offsets and size asserted on both sides, see params.rs); the kernels receive it by value.
unsafe impl DeviceRepr for FattnHopperBwdParams {}

/// The Hopper main kernel of `p` in `T`: its instance and the tensor maps of q, k, v and dO.
pub(super) struct HopperBwd {
    pub inst: &'static Instance,
    maps: [TmaDesc; 4],
}

impl HopperBwd {
    /// The kernel's parameters around the backward's own.
    pub fn params(&self, bwd: FattnBwdParams) -> FattnHopperBwdParams {
        let [tma_q, tma_k, tma_v, tma_do] = self.maps;
        FattnHopperBwdParams { tma_q, tma_k, tma_v, tma_do, bwd, pad_hopper_bwd_: [0; 1] }
    }
}

/// The Hopper main kernel for `p`, or `None` when it does not cover it (see the module docs).
/// `qt`, `kt`, `vt`, `dot`: q, k, v and dO as the launch reads them (rank 4, dense).
pub(super) fn plan<T: KernelDtype>(
    p: &Problem,
    dev: &CudaDevice,
    [qt, kt, vt, dot]: [&DevTensor<'_>; 4],
) -> Result<Option<HopperBwd>> {
    if T::DTYPE == Dtype::F32 || !p.head_dim.is_multiple_of(8) || p.packed().is_some() {
        return Ok(None);
    }
    if cuda_kernels()? == CudaKernels::Sm80 {
        return Ok(None);
    }
    if !Arch::Sm90a.runs_on(heuristics::device_facts(dev)?.compute_capability) {
        return Ok(None);
    }
    let at = SOURCES.iter().position(|s| s.arch == Arch::Sm90a && s.families.contains(&Family::Bwd));
    if !super::has_code(at) {
        return Ok(None);
    }
    let mods = p.softcap > 0.0 || p.has_alibi;
    let key = KernelKey { family: Family::Bwd, dtype: T::DTYPE, head_dim: p.head_dim, mods };
    let Ok(inst) = heuristics::instance(key, Arch::Sm90a) else { return Ok(None) };
    if p.batch == 0 || p.seq_q == 0 || p.seq_k == 0 {
        return Ok(None);
    }
    let d = p.head_dim;
    let q_ext = (p.batch, p.seq_q, p.heads, d);
    let kv_ext = (p.batch, p.seq_k, p.kv_heads, d);
    let Some(tma_q) = tensor_map::<T>(qt, q_ext, inst.block_rows)? else { return Ok(None) };
    let Some(tma_k) = tensor_map::<T>(kt, kv_ext, inst.key_block)? else { return Ok(None) };
    let Some(tma_v) = tensor_map::<T>(vt, kv_ext, inst.key_block)? else { return Ok(None) };
    let Some(tma_do) = tensor_map::<T>(dot, q_ext, inst.block_rows)? else { return Ok(None) };
    Ok(Some(HopperBwd { inst, maps: [tma_q, tma_k, tma_v, tma_do] }))
}
