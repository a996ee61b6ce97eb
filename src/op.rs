//! The candle custom op: [`FusedAttention`] holds a validated [`Problem`] and hands the
//! storages to the CPU or CUDA back end, forward and backward. The public functions in
//! `api.rs` build and apply it.
//!
//! **Forward.** Each back end returns the output and, when [`Problem::want_lse`] is set, the
//! per-row log-sum-exp `(batch, heads, seq_q)` f32, which the op keeps in [`LseSlot`]: the
//! backward reads it instead of recomputing it, and `attention_with_lse` hands it to the
//! caller. It is set whenever an input is tracked for gradients, and otherwise only on
//! request, so inference pays nothing for it.
//!
//! **Backward.** [`candle_core::CustomOp3::bwd`] receives q, k, v, the output O and its
//! gradient dO, and calls the back end's FlashAttention-2 backward with the kept LSE. It
//! returns dq, dk and dv in the input dtype, dk/dv summed over each kv head's group of q
//! heads (GQA). ALiBi slopes are constants: they get no gradient.
//!
//! **Into a caller's output.** [`forward_into`] applies [`FusedAttentionInto`], an
//! [`InplaceOp1`] on the caller's `out`, for `attention_varlen_into`: the same CPU or CUDA
//! forward, writing into `out`'s storage instead of a fresh one. In-place ops have no backward.

use std::sync::{Arc, Mutex};

use candle_core::op::BackpropOp;
use candle_core::{bail, CpuStorage, InplaceOp1, Layout, Result, Shape, Storage, Tensor};

use crate::cpu;
#[cfg(feature = "cuda")]
use crate::cuda;
use crate::packed::{Prefetched, Varlen};
use crate::problem::{head_dim_contiguous, Problem};

/// Where the forward leaves its log-sum-exp, a `(batch, heads, seq_q)` f32 tensor without a
/// gradient graph, for the backward and for `attention_with_lse`.
pub(crate) type LseSlot = Arc<Mutex<Option<Tensor>>>;

/// The fused attention op. Applied through [`crate::attention`], which validates first.
pub(crate) struct FusedAttention {
    pub problem: Problem,
    /// `(batch, heads)` f32, contiguous, on q's device.
    pub alibi: Option<Tensor>,
    /// The forward's LSE when `problem.want_lse`.
    pub lse: LseSlot,
}

impl FusedAttention {
    pub fn new(problem: Problem, alibi: Option<Tensor>) -> Self {
        Self { problem, alibi, lse: Arc::new(Mutex::new(None)) }
    }

    fn keep_lse(&self, lse: Option<Storage>) -> Result<()> {
        let p = &self.problem;
        match (p.want_lse, lse) {
            (false, _) => Ok(()),
            (true, Some(lse)) => {
                let t = Tensor::from_storage(lse, p.lse_shape(), BackpropOp::none(), false);
                *self.lse.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
                Ok(())
            }
            (true, None) => bail!("fused-attn internal: the back end returned no log-sum-exp although it was asked to"),
        }
    }

    /// The kept LSE: `(batch, heads, seq_q)` f32 (packed: `(heads, total_q)`), no gradient
    /// graph.
    pub fn kept_lse(slot: &LseSlot) -> Result<Tensor> {
        match &*slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(t) => Ok(t.clone()),
            None => bail!("fused-attn: the forward kept no log-sum-exp (no input was tracked for gradients)"),
        }
    }
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
        let (out, lse) = cpu::forward(&self.problem, (q, ql), (k, kl), (v, vl), alibi.as_deref())?;
        self.keep_lse(lse.map(|l| Storage::Cpu(CpuStorage::F32(l))))?;
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
        let (out, lse) = cuda::forward(&self.problem, (q, ql), (k, kl), (v, vl), self.alibi.as_ref())?;
        self.keep_lse(lse.map(Storage::Cuda))?;
        Ok((out, ql.shape().clone()))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        out: &Tensor,
        grad_out: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let lse = FusedAttention::kept_lse(&self.lse)?;
        let (dq, dk, dv) = backward(&self.problem, self.alibi.as_ref(), q, k, v, out, grad_out, &lse)?;
        Ok((Some(dq), Some(dk), Some(dv)))
    }
}

/// The `(batch, heads)` ALiBi slopes of a forward into a caller's output, made before any
/// storage is locked: read to the host for the CPU, a fresh contiguous f32 copy on the GPU.
pub(crate) enum IntoSlopes {
    None,
    Host(Vec<f32>),
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Device(Tensor),
}

/// The storages of q, k and v, which the caller holds read-locked for the call.
enum IntoInputs<'a> {
    Cpu([(&'a CpuStorage, &'a Layout); 3]),
    #[cfg(feature = "cuda")]
    Cuda([(&'a candle_core::CudaStorage, &'a Layout); 3]),
}

/// The fused attention written into a caller's tensor ([`forward_into`]); candle write-locks
/// the output's storage around [`InplaceOp1::cpu_fwd`] / [`InplaceOp1::cuda_fwd`].
struct FusedAttentionInto<'a> {
    problem: Problem,
    alibi: IntoSlopes,
    inputs: IntoInputs<'a>,
}

impl InplaceOp1 for FusedAttentionInto<'_> {
    fn name(&self) -> &'static str {
        "fused-attention-into"
    }

    #[allow(clippy::infallible_destructuring_match)] // one variant without the `cuda` feature
    fn cpu_fwd(&self, out: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let [q, k, v] = match &self.inputs {
            IntoInputs::Cpu(qkv) => qkv,
            #[cfg(feature = "cuda")]
            IntoInputs::Cuda(_) => bail!("fused-attn: out is on the CPU but q is not"),
        };
        let alibi = match &self.alibi {
            IntoSlopes::None => None,
            IntoSlopes::Host(s) => Some(s.as_slice()),
            IntoSlopes::Device(_) => bail!("fused-attn internal: device slopes for a CPU forward"),
        };
        cpu::forward_into(&self.problem, *q, *k, *v, alibi, (out, layout))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, out: &mut candle_core::CudaStorage, layout: &Layout) -> Result<()> {
        let IntoInputs::Cuda([q, k, v]) = &self.inputs else { bail!("fused-attn: out is on a GPU but q is not") };
        let alibi = match &self.alibi {
            IntoSlopes::None => None,
            IntoSlopes::Device(t) => Some(t),
            IntoSlopes::Host(_) => bail!("fused-attn internal: host slopes for a CUDA forward"),
        };
        cuda::forward_into(&self.problem, *q, *k, *v, alibi, (out, layout))
    }
}

/// The values of `vl`'s index tensors that live on q's GPU, read by the back end all at once,
/// with one wait (src/cuda/indices.rs: off candle's stream where cudarc orders streams by
/// events); records how many it read on the side stream (`take_last_side_index_reads`, for the
/// tests). On the CPU, nothing to read ahead. `FUSED_ATTN_INDEX_READ=stream` (a diagnostic
/// switch for same-binary A/Bs, read per call) leaves every tensor to the checks, which read
/// each on candle's stream with a wait of its own, as before session 37.
pub(crate) fn read_indices(q: &Tensor, vl: &Varlen) -> Result<Prefetched> {
    #[cfg(feature = "cuda")]
    if q.device().is_cuda() && std::env::var("FUSED_ATTN_INDEX_READ").map_or(true, |v| v != "stream") {
        let on_q: Vec<&Tensor> =
            vl.index_tensors().into_iter().filter(|t| t.device().same_device(q.device())).collect();
        let got = cuda::indices::read_many(&on_q)?;
        let read: Vec<_> = on_q.iter().zip(got.values).filter_map(|(t, v)| Some((t.id(), v?))).collect();
        crate::cuda_kernels::record_side_index_reads(if got.side { read.len() } else { 0 });
        return Ok(Prefetched::new(read));
    }
    let _ = (q, vl);
    crate::cuda_kernels::record_side_index_reads(0);
    Ok(Prefetched::default())
}

/// Runs `run` on the values of `vl`'s index tensors: those on q's GPU read by the back end
/// ([`read_indices`]), the others left to `run`'s checks.
///
/// `run` may run twice, its first result dropped (it returns fresh tensors, or writes a
/// caller's buffer that the second run overwrites whole), so it may run on guessed values. On
/// a device that drains to read indices (candle's default CUDA device, every index tensor on
/// it) where the last calls' values make a guess (src/cuda/speculation.rs: they repeated, or
/// the last guess was wrong), the copies of the indices are queued, `run` runs on the guessed
/// values (validation and launch), and only then does the host wait for the copies: equal
/// values return that result, other values run `run` again on them.
/// `FUSED_ATTN_INDEX_GUESS=0` (read per call, for same-binary A/Bs) turns guessing off.
pub(crate) fn with_indices<T>(q: &Tensor, vl: &Varlen, run: impl Fn(Prefetched) -> Result<T>) -> Result<T> {
    #[cfg(feature = "cuda")]
    if let candle_core::Device::Cuda(dev) = q.device() {
        let ts = vl.index_tensors();
        if std::env::var("FUSED_ATTN_INDEX_GUESS").map_or(true, |v| v != "0")
            && std::env::var("FUSED_ATTN_INDEX_READ").map_or(true, |v| v != "stream")
            && ts.iter().all(|t| t.device().same_device(q.device()))
            && cuda::indices::drains(ts[0])
        {
            use cuda::speculation::{guess, observe, Signature};
            let sig = Signature::new(&ts, vl.seqlens_k.id() == vl.seqlens_q.id());
            let with = |values: &[Vec<i64>]| {
                Prefetched::new(ts.iter().zip(values).map(|(t, v)| (t.id(), v.clone())).collect())
            };
            if let Some(guessed) = guess(dev.id(), &sig) {
                // The copies on a stream of their own, forked off candle's: they then run
                // beside the guess's kernels, not ahead of them (`FUSED_ATTN_INDEX_GUESS=stream`:
                // on candle's stream, for A/Bs).
                let fork = std::env::var("FUSED_ATTN_INDEX_GUESS").map_or(true, |v| v != "stream");
                if let Some(staged) = cuda::indices::stage_all_on_stream(&ts, fork)? {
                    let first = run(with(&guessed));
                    let read = staged.finish_polling()?;
                    crate::cuda_kernels::record_side_index_reads(0);
                    let Some(values) = read.values.into_iter().collect::<Option<Vec<_>>>() else {
                        bail!("fused-attn internal: an index tensor was not read")
                    };
                    let right = observe(dev.id(), &sig, &values, true);
                    crate::cuda_kernels::record_index_guess(right);
                    if right {
                        return first;
                    }
                    drop(first);
                    return run(with(&values));
                }
            }
            let pre = read_indices(q, vl)?;
            // Kept for the next call's guess when every tensor was read here (not another
            // dtype or a strided view, which the checks read).
            if let Some(values) = pre.values_of(&ts) {
                observe(dev.id(), &sig, &values, false);
            }
            return run(pre);
        }
    }
    run(read_indices(q, vl)?)
}

/// Which storage a tensor's data lives in: equal for tensors that share one (views of one
/// buffer), as candle's own (crate-private) `same_storage` compares them. Takes and drops
/// a read lock on it.
pub(crate) fn storage_id(t: &Tensor) -> usize {
    let (s, _) = t.storage_and_layout();
    std::ptr::from_ref::<Storage>(&s) as usize
}

/// Runs the CPU forward of `problem` (without the LSE) into `out`, which the caller checked:
/// q's shape and dtype, contiguous, on the CPU, sharing no storage with q, k or v.
///
/// Locks: each distinct storage of q, k and v is read-locked once (they may be views of one
/// fused QKV buffer, and a second read lock on one storage from one thread can deadlock
/// behind a waiting writer), then candle write-locks `out`'s, which is none of them.
pub(crate) fn forward_into(
    problem: Problem,
    alibi: IntoSlopes,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let [iq, ik, iv] = [storage_id(q), storage_id(k), storage_id(v)];
    let out_id = storage_id(out);
    if out_id == iq || out_id == ik || out_id == iv {
        bail!("fused-attn internal: out shares a storage with q, k or v")
    }
    let gq = q.storage_and_layout().0;
    let gk = (ik != iq).then(|| k.storage_and_layout().0);
    let gv = (iv != iq && iv != ik).then(|| v.storage_and_layout().0);
    let sq: &Storage = &gq;
    let sk: &Storage = gk.as_deref().unwrap_or(sq);
    let sv: &Storage = match gv.as_deref() {
        Some(s) => s,
        None if iv == ik => sk,
        None => sq,
    };
    let inputs = match (sq, sk, sv) {
        (Storage::Cpu(qs), Storage::Cpu(ks), Storage::Cpu(vs)) => {
            IntoInputs::Cpu([(qs, q.layout()), (ks, k.layout()), (vs, v.layout())])
        }
        #[cfg(feature = "cuda")]
        (Storage::Cuda(qs), Storage::Cuda(ks), Storage::Cuda(vs)) => {
            IntoInputs::Cuda([(qs, q.layout()), (ks, k.layout()), (vs, v.layout())])
        }
        _ => bail!(
            "fused-attn: a forward into a caller's output runs on the CPU or CUDA, got q on {:?}",
            q.device().location()
        ),
    };
    let op = FusedAttentionInto { problem, alibi, inputs };
    out.inplace_op1(&op)
}

/// The back ends' backward on tensors: dq, dk, dv (input dtype, contiguous, no gradient
/// graph) of the attention `p` from q, k, v, the output, its gradient and the forward's LSE
/// (`p.lse_shape()`, f32). `alibi` is `(batch, heads)` f32, contiguous, on q's device. The
/// gradients have q's, k's and v's shapes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    p: &Problem,
    alibi: Option<&Tensor>,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    grad_out: &Tensor,
    lse: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    {
        // The back ends read the LSE as a plain (batch, heads, seq_q) buffer from its start.
        let lse =
            if lse.is_contiguous() && lse.layout().start_offset() == 0 { lse.clone() } else { lse.affine(1.0, 0.0)? };
        let grad_out = if grad_out.dtype() == q.dtype() { grad_out.clone() } else { grad_out.to_dtype(q.dtype())? };
        let grad_out = head_dim_contiguous(&grad_out)?;
        let out = head_dim_contiguous(out)?;
        let shapes = [q.shape().clone(), k.shape().clone(), v.shape().clone()];
        let (qs, ql) = q.storage_and_layout();
        let (ks, kl) = k.storage_and_layout();
        let (vs, vl) = v.storage_and_layout();
        let (os, ol) = out.storage_and_layout();
        let (gs, gl) = grad_out.storage_and_layout();
        let (ls, _) = lse.storage_and_layout();
        let grads: [Storage; 3] = match (&*qs, &*ks, &*vs, &*os, &*gs, &*ls) {
            (Storage::Cpu(q), Storage::Cpu(k), Storage::Cpu(v), Storage::Cpu(o), Storage::Cpu(g), Storage::Cpu(l)) => {
                let alibi = match alibi {
                    None => None,
                    Some(t) => Some(t.flatten_all()?.to_vec1::<f32>()?),
                };
                let CpuStorage::F32(l) = l else { bail!("fused-attn internal: the log-sum-exp is not f32") };
                let (dq, dk, dv) =
                    cpu::backward::backward(p, (q, ql), (k, kl), (v, vl), (o, ol), (g, gl), l, alibi.as_deref())?;
                [Storage::Cpu(dq), Storage::Cpu(dk), Storage::Cpu(dv)]
            }
            #[cfg(feature = "cuda")]
            (
                Storage::Cuda(q),
                Storage::Cuda(k),
                Storage::Cuda(v),
                Storage::Cuda(o),
                Storage::Cuda(g),
                Storage::Cuda(l),
            ) => {
                let lse_layout = Layout::contiguous(p.lse_shape());
                let (dq, dk, dv) =
                    cuda::backward(p, (q, ql), (k, kl), (v, vl), (o, ol), (g, gl), (l, &lse_layout), alibi)?;
                [Storage::Cuda(dq), Storage::Cuda(dk), Storage::Cuda(dv)]
            }
            _ => bail!(
                "fused-attn: backward needs q, k, v, the output and its gradient on one CPU or CUDA device, got {:?}",
                q.device().location()
            ),
        };
        let [dq, dk, dv] = grads;
        let [sq, sk, sv] = shapes;
        let wrap = |s: Storage, shape: Shape| Tensor::from_storage(s, shape, BackpropOp::none(), false);
        Ok((wrap(dq, sq), wrap(dk, sk), wrap(dv, sv)))
    }
}
