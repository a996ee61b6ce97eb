//! candle-flash-attn 0.11.1's public API, implemented by `candle-fused-attn`.
//!
//! Put this crate in place of the upstream one with Cargo's `[patch]`, in the workspace
//! that builds your program:
//!
//! ```toml
//! [patch.crates-io]
//! candle-flash-attn = { path = "path/to/candle-fused-attn/compat/candle-flash-attn" }
//! ```
//!
//! Every crate of the build that calls `candle_flash_attn::*` (candle-transformers' models
//! behind its `flash-attn` feature, for one) then runs candle-fused-attn's op: on CUDA
//! (sm_80 and newer, the default `cuda` feature) and on the CPU, which upstream does not
//! have. The eleven functions and the `FlashAttn` op struct below are upstream's public
//! items, with the same names, signatures and semantics (FlashAttention >= 2.1: causal and
//! window masks align bottom-right). `compat/transformers-check/tests/signatures.rs` checks
//! each signature against upstream's, written out as function-pointer types.

pub use candle_fused_attn::{
    flash_attn, flash_attn_alibi, flash_attn_alibi_windowed, flash_attn_alibi_windowed_softcap, flash_attn_varlen,
    flash_attn_varlen_alibi, flash_attn_varlen_alibi_windowed, flash_attn_varlen_alibi_windowed_softcap,
    flash_attn_varlen_paged_windowed, flash_attn_varlen_windowed, flash_attn_windowed, FlashAttn,
};
