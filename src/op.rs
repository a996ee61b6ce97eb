//! The candle custom op: [`FusedAttention`] holds a validated [`Problem`] and hands the
//! storages to the CPU or CUDA back end. The public functions in `api.rs` build and apply it.

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor};

use crate::cpu;
#[cfg(feature = "cuda")]
use crate::cuda;
use crate::problem::Problem;

/// The fused attention op. Applied through [`crate::attention`], which validates first.
pub(crate) struct FusedAttention {
    pub problem: Problem,
    /// `(batch, heads)` f32, contiguous, on q's device.
    pub alibi: Option<Tensor>,
}

impl candle_core::CustomOp3 for FusedAttention {
    fn name(&self) -> &'static str {
        "fused-attention"
    }

    fn cpu_fwd(
        &self,
        q: &CpuStorage,
        ql: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        v: &CpuStorage,
        vl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let alibi = match &self.alibi {
            None => None,
            Some(t) => Some(t.flatten_all()?.to_vec1::<f32>()?),
        };
        let out = cpu::forward(&self.problem, (q, ql), (k, kl), (v, vl), alibi.as_deref())?;
        Ok((out, ql.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        q: &candle_core::CudaStorage,
        ql: &Layout,
        k: &candle_core::CudaStorage,
        kl: &Layout,
        v: &candle_core::CudaStorage,
        vl: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let out = cuda::forward(&self.problem, (q, ql), (k, kl), (v, vl), self.alibi.as_ref())?;
        Ok((out, ql.shape().clone()))
    }
}
