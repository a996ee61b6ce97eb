//! Which CUDA kernel generation runs a problem: a test and measurement hook, the CUDA
//! counterpart of `with_cpu_path`. By default ([`CudaKernels::Auto`]) a compute-capability
//! 9.0 GPU runs the Hopper prefill kernel (kernels/fwd_sm90.cu) and the Hopper backward main
//! kernel (kernels/bwd_sm90.cu) on the problems they cover, merges the split decode's partials
//! in a launch of its own (kernels/decode_sm90.cu), and everything else runs the sm_80
//! kernels; [`CudaKernels::Sm80`] keeps every call on the
//! sm_80 kernels, so that both generations can be checked and timed on one GPU.
//!
//! Forced per thread with [`with_cuda_kernels`], or for the process with the environment
//! variable `FUSED_ATTN_CUDA_KERNELS` (`auto` or `sm80`, read once).

use std::cell::Cell;

use candle_core::Result;

/// The environment variable that forces a kernel generation for the whole process.
pub const KERNELS_VAR: &str = "FUSED_ATTN_CUDA_KERNELS";

/// A CUDA kernel generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaKernels {
    /// The newest kernels the GPU and the problem allow (Hopper prefill on 9.0).
    Auto,
    /// The sm_80 kernels only (mma.sync), on every GPU.
    Sm80,
}

thread_local! {
    static FORCED: Cell<Option<CudaKernels>> = const { Cell::new(None) };
}

/// Runs `f` with every CUDA call on this thread using `kernels`.
pub fn with_cuda_kernels<R>(kernels: CudaKernels, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<CudaKernels>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(Some(kernels))));
    f()
}

/// The generation forced on this thread, else by [`KERNELS_VAR`], else `Auto`. An unknown
/// value of the variable is an error naming it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn cuda_kernels() -> Result<CudaKernels> {
    if let Some(k) = FORCED.with(|c| c.get()) {
        return Ok(k);
    }
    static ENV: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let value = ENV.get_or_init(|| std::env::var_os(KERNELS_VAR).map(|v| v.to_string_lossy().into_owned()));
    match value.as_deref().map(str::trim) {
        None | Some("") | Some("auto") => Ok(CudaKernels::Auto),
        Some("sm80") => Ok(CudaKernels::Sm80),
        Some(other) => candle_core::bail!("{KERNELS_VAR}={other:?}: expected `auto` or `sm80`"),
    }
}

thread_local! {
    static LAST_PREFILL: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Records the prefill kernel this thread just launched (src/cuda/prefill*.rs).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_prefill(name: &'static str) {
    LAST_PREFILL.with(|c| c.set(Some(name)));
}

thread_local! {
    static LAST_PREFILL_PAIRS: Cell<bool> = const { Cell::new(false) };
}

/// Records whether the prefill launch this thread just made split its tiles' key blocks over a
/// cluster of blocks (src/cuda/prefill_sm90.rs `pair_split`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_prefill_pairs(split: bool) {
    LAST_PREFILL_PAIRS.with(|c| c.set(split));
}

/// Whether the last prefill launch of this thread split its tiles' key blocks over a cluster
/// of blocks (another order of additions than one block per tile: other bits, the same
/// tolerance), and forgets it. The tests that compare two calls bit for bit use it.
pub fn take_last_prefill_pairs() -> bool {
    LAST_PREFILL_PAIRS.with(|c| c.take())
}

thread_local! {
    static LAST_PREFILL_TAIL: Cell<usize> = const { Cell::new(0) };
}

/// Records into how many pieces the prefill launch this thread just made cut each tile of its
/// last round (src/cuda/prefill_sm90.rs `tail_pieces`; 0: none).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_prefill_tail(pieces: usize) {
    LAST_PREFILL_TAIL.with(|c| c.set(pieces));
}

/// Into how many pieces of key blocks the last prefill launch of this thread cut each tile of
/// its persistent grid's last round (0: none; another order of additions for those tiles'
/// rows: other bits, the same tolerance), and forgets it. The tests use it to prove that the
/// split ran, and to leave such calls out of bit-for-bit comparisons.
pub fn take_last_prefill_tail() -> usize {
    LAST_PREFILL_TAIL.with(|c| c.take())
}

thread_local! {
    static LAST_PREFILL_MULTICAST: Cell<bool> = const { Cell::new(false) };
}

/// Records whether the prefill launch this thread just made ran as clusters of two blocks
/// sharing each K/V tile (src/cuda/prefill_sm90.rs `kv_multicast`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_prefill_multicast(on: bool) {
    LAST_PREFILL_MULTICAST.with(|c| c.set(on));
}

/// Whether the last prefill launch of this thread ran as clusters of two blocks that share
/// each K and V tile through TMA multicast (the same arithmetic, so the same bits), and
/// forgets it. The tests use it to prove that the multicast path ran.
pub fn take_last_prefill_multicast() -> bool {
    LAST_PREFILL_MULTICAST.with(|c| c.take())
}

/// The name of the last prefill kernel this thread launched, and forgets it: the tests use
/// it to prove which kernel generation ran a call (`None`: no prefill kernel ran since the
/// last take, for example because the call took the decode kernel).
pub fn take_last_prefill_kernel() -> Option<&'static str> {
    LAST_PREFILL.with(|c| c.take())
}

thread_local! {
    static LAST_BACKWARD: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Records the backward main kernel this thread just launched (src/cuda/backward.rs).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_backward(name: &'static str) {
    LAST_BACKWARD.with(|c| c.set(Some(name)));
}

/// The name of the last backward main kernel this thread launched, and forgets it: the tests
/// use it to prove which kernel generation computed a gradient (`None`: no backward main
/// kernel ran since the last take, for example because no query row sees a key).
pub fn take_last_backward_kernel() -> Option<&'static str> {
    LAST_BACKWARD.with(|c| c.take())
}

thread_local! {
    /// `Some(Some(name))`: the last decode call launched its combine `name` after the split
    /// kernel; `Some(None)`: it merged in the split kernel (or had one split).
    static LAST_DECODE_COMBINE: Cell<Option<Option<&'static str>>> = const { Cell::new(None) };
}

/// Records how the decode call this thread just launched merged its splits (src/cuda/decode.rs):
/// the combine kernel it launched, or `None`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_decode_combine(name: Option<&'static str>) {
    LAST_DECODE_COMBINE.with(|c| c.set(Some(name)));
}

/// How the last decode call of this thread merged its splits, and forgets it: `Some(Some(name))`
/// when it launched the separate combine kernel `name` (kernels/decode_sm90.cu, compute
/// capability 9.0), `Some(None)` when the split kernel merged them itself or there was one
/// split, `None` when no decode call ran since the last take. The tests use it to prove that
/// both ways ran.
pub fn take_last_decode_combine() -> Option<Option<&'static str>> {
    LAST_DECODE_COMBINE.with(|c| c.take())
}

thread_local! {
    static LAST_SIDE_INDEX_READS: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Records how many of the packed call's index tensors this thread just read on the side
/// stream (src/cuda/indices.rs; 0 when all were on the CPU or read on candle's stream).
pub(crate) fn record_side_index_reads(n: usize) {
    LAST_SIDE_INDEX_READS.with(|c| c.set(Some(n)));
}

/// How many index tensors the last packed call of this thread read on the side stream, and
/// forgets it (`None`: no packed call since the last take). The tests use it to prove that a
/// device of its own stream (`Device::new_cuda_with_stream`) takes the side read, and candle's
/// default device does not.
pub fn take_last_side_index_reads() -> Option<usize> {
    LAST_SIDE_INDEX_READS.with(|c| c.take())
}

thread_local! {
    static LAST_INDEX_GUESS: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Records whether the packed call this thread just made ran on guessed index values that
/// proved right (`true`) or wrong (`false`, run again on the values read); src/cuda/speculation.rs.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_index_guess(right: bool) {
    LAST_INDEX_GUESS.with(|c| c.set(Some(right)));
}

/// Whether the last packed call of this thread ran on guessed GPU index values, and forgets it:
/// `Some(true)` when the guess was right (its launch was the answer), `Some(false)` when it was
/// wrong (dropped, run again on the values read), `None` when no call guessed since the last
/// take. The tests use it to prove that both ways ran (src/cuda/speculation.rs).
pub fn take_last_index_guess() -> Option<bool> {
    LAST_INDEX_GUESS.with(|c| c.take())
}

/// Lab only (examples/lab_stamps.rs, a build with `NVCC_FLAGS=-DFATTN_LAB_STAMPS=K`): the bytes
/// of the `__device__` variable `name` of kernel file `file` on `device`.
#[doc(hidden)]
pub fn lab_read_global(device: &candle_core::Device, file: &str, name: &str) -> Result<Vec<u8>> {
    match device {
        #[cfg(feature = "cuda")]
        candle_core::Device::Cuda(dev) => crate::cuda::lab_read_global(dev, file, name),
        _ => candle_core::bail!("fused-attn lab: {file}'s {name} lives on a CUDA device of a `cuda` build"),
    }
}
