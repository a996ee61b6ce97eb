//! Fused (FlashAttention-style) attention for candle, on the CPU and on CUDA.
//!
//! One op, [`attention`], computes `softmax(scale · q kᵀ + bias) v` without ever
//! materialising the `Sq×Sk` score matrix. The eleven functions of `candle-flash-attn`
//! 0.11.1 ([`flash_attn`], [`flash_attn_windowed`], [`flash_attn_alibi`],
//! [`flash_attn_alibi_windowed`], [`flash_attn_alibi_windowed_softcap`], [`flash_attn_varlen`]
//! and its windowed, ALiBi and softcap forms, [`flash_attn_varlen_paged_windowed`]) and its op
//! struct [`FlashAttn`] have its names, signatures and semantics, so switching crates is one
//! `use` line, and they run on every device.
//!
//! * **Packed batches and paged KV caches**: [`attention_varlen`] with a [`Varlen`]
//!   (cumulative lengths, a block table, multimodal prefix ranges), and
//!   [`attention_varlen_into`] for a caller-owned output.
//! * **Training**: every function is differentiable (a FlashAttention-2 backward that
//!   recomputes the probabilities from the forward's log-sum-exp); [`attention_with_lse`],
//!   [`attention_varlen_with_lse`], [`attention_backward`] and [`attention_varlen_backward`]
//!   for loops of your own.
//! * **References**: [`attention_ref`] and [`attention_ref_varlen`] compute the same thing in
//!   plain candle ops.
//!
//! # Semantics
//! * **Layout.** `q` is `(batch, seq_q, heads, head_dim)`; `k` and `v` are
//!   `(batch, seq_k, kv_heads, head_dim)` with `heads % kv_heads == 0` (GQA/MQA):
//!   q head `i` reads kv head `i / (heads / kv_heads)`. No K/V copies are made.
//!   The output has q's shape and dtype.
//! * **Scores.** `s = softmax_scale · <q_i, k_j>`; with a softcap `c`,
//!   `s = c · tanh(s / c)`; with ALiBi, `s += -slope_h · |i + sk - sq - j|`.
//! * **Masks align bottom-right.** With `diag(i) = i + sk - sq`: causal keeps
//!   `j <= diag(i)`, `window_size_left = Some(l)` keeps `j >= diag(i) - l`,
//!   `window_size_right = Some(r)` keeps `j <= diag(i) + r`. A KV-cache decoding step
//!   (`sq < sk`) is therefore just a call.
//! * **A row with no visible key outputs zeros**, not NaN.
//! * **Softmax runs in f32** with f32 accumulation for every input dtype (f32, f16, bf16).
//! * **Strided inputs** (views from `narrow`, `transpose`, `i`) are read in place through
//!   their strides as long as the head dimension is contiguous; otherwise they are copied
//!   once to a contiguous buffer.
//! * **NaN** in a query row reaches only that row's output; NaN in a key reaches only
//!   the rows that see that key.
//!
//! # Cargo features
//! * `cuda`: the CUDA path (sm_80 and newer), and candle's own `cuda` feature. The build
//!   compiles `kernels/*.cu` with nvcc into fatbins: sm_80 and sm_90 machine code and
//!   compute_80 PTX for the FlashAttention-2 kernels, sm_90a code for the Hopper ones
//!   (wgmma, TMA), chosen by compute capability at load time (tested with CUDA 13.0;
//!   `scripts/cuda-toolkit.sh` in the repository installs a pinned one without root;
//!   `FUSED_ATTN_CUDA_ARCHS=90` builds one GPU's half). Without it the crate needs no CUDA
//!   toolkit, and a call on a CUDA tensor returns an error. The public API is the same
//!   either way; these docs are built without it (docs.rs has no CUDA toolkit).
//!
//! # Example
//! ```
//! use candle_core::{Device, DType, Tensor};
//! # fn main() -> candle_core::Result<()> {
//! let dev = Device::Cpu;
//! // batch 1, 7 queries, 8 heads; a KV cache of 19 positions with 2 kv heads (GQA 4:1).
//! let q = Tensor::randn(0f32, 1., (1, 7, 8, 64), &dev)?;
//! let k = Tensor::randn(0f32, 1., (1, 19, 2, 64), &dev)?;
//! let v = Tensor::randn(0f32, 1., (1, 19, 2, 64), &dev)?;
//! let scale = 1.0 / (64f32).sqrt();
//! let out = candle_fused_attn::flash_attn(&q, &k, &v, scale, true)?;
//! assert_eq!(out.dims(), &[1, 7, 8, 64]);
//!
//! // The same call through the reference path agrees.
//! let params = candle_fused_attn::AttnParams::new(scale).causal(true);
//! let reference = candle_fused_attn::attention_ref(&q, &k, &v, &params)?;
//! let err = (out - reference)?.abs()?.max_all()?.to_scalar::<f32>()?;
//! assert!(err < 1e-4);
//! # Ok(()) }
//! ```

mod alloc;
mod api;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod cuda_kernels;
mod dropin;
mod limits;
mod op;
mod packed;
mod problem;
mod reference;

pub use api::{
    attention, attention_backward, attention_varlen, attention_varlen_backward, attention_varlen_into,
    attention_varlen_with_lse, attention_with_lse,
};
pub use dropin::{
    flash_attn, flash_attn_alibi, flash_attn_alibi_windowed, flash_attn_alibi_windowed_softcap, flash_attn_varlen,
    flash_attn_varlen_alibi, flash_attn_varlen_alibi_windowed, flash_attn_varlen_alibi_windowed_softcap,
    flash_attn_varlen_paged_windowed, flash_attn_varlen_windowed, flash_attn_windowed, FlashAttn,
};
pub use packed::Varlen;
pub use problem::{AttnParams, MAX_HEAD_DIM};
pub use reference::{attention_ref, attention_ref_varlen};
#[doc(hidden)]
pub use reference::{attention_ref_lse, attention_ref_probs, attention_ref_varlen_lse};

pub use cpu::release_cpu_buffers;
// Test and measurement hooks that force a CPU kernel path (`src/cpu/mod.rs`).
#[doc(hidden)]
pub use cpu::{cpu_paths, with_cpu_path, CpuPath};
// The same for the CUDA kernel generation (`src/cuda_kernels.rs`).
#[doc(hidden)]
pub use cuda_kernels::{
    take_last_backward_kernel, take_last_decode_combine, take_last_index_guess, take_last_prefill_kernel,
    take_last_prefill_multicast, take_last_prefill_pairs, take_last_prefill_tail, take_last_side_index_reads,
    with_cuda_kernels, CudaKernels, KERNELS_VAR,
};
// Lab only: reads a kernel file's `__device__` variable (examples/lab_stamps.rs).
#[doc(hidden)]
pub use cuda_kernels::lab_read_global;

/// The README's Rust examples, compiled and run as doc tests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
