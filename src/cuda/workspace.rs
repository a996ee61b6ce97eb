//! Per-stream scratch for kernels that count blocks in on counters: the split decode's tile
//! counters and partials (decode.rs) and the Hopper prefill's tile counter, stream-K arrival
//! flags and tail-split flags and partials (prefill_sm90.rs).
//!
//! The counters are zeroed once, when the buffer is allocated, and every kernel that uses them
//! leaves them at zero when it ends (the last block to use a counter resets it), so a launch
//! takes them without a memset of its own: a zeroing launch on the stream before every kernel
//! costs a few microseconds of GPU time, which at 12-16 µs (a short decode step, a small
//! prefill) is a tenth of the call.

use std::cell::RefCell;
use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{bail, Result};

/// A launch's scratch on one stream: `counters` u32 counters at the start, zero between
/// launches, then room for `partial_words` f32 words that a launch writes before it reads them.
struct Workspace {
    buf: CudaSlice<u32>,
    counters: usize,
}

impl Workspace {
    /// Where the partials start: the counters rounded up to 16 bytes (the combine reads float4).
    fn partials_offset(counters: usize) -> usize {
        counters.next_multiple_of(4)
    }
    fn fits(&self, counters: usize, partial_words: usize) -> bool {
        counters <= self.counters && Self::partials_offset(self.counters) + partial_words <= self.buf.len()
    }
}

thread_local! {
    /// One workspace per stream this thread has launched a counting kernel on. The counters
    /// are zeroed once, when the buffer is allocated: every launch leaves them at zero (the
    /// last block to use a counter resets it). The partials need no zeroing: every block writes
    /// its slots before another reads them. Launches that share a workspace run in order: they
    /// come from one thread and one `CudaStream`, and a candle device's stream is either its
    /// own stream or the calling thread's per-thread default stream (`Device::new_cuda`), so
    /// launches from different threads, which may run concurrently, never share one. Its size
    /// is bounded: the decode's `split_keys` keeps splits × tiles within the blocks resident at
    /// once and a tile has ≤ 16 rows, so there are at most 16 partial rows per resident block
    /// (per-warp partials: 4 warps × tiles of ≤ 8 rows, 32; about 2.2 / 4.4 MB of partials on
    /// an H100, every instance); the prefill takes counters (one per SM and consumer
    /// warpgroup, and one) and its tail split's partials (at most one piece per SM: 9.1 MB
    /// for d128 on 132 SMs), its stream-K partials are per call.
    static WORKSPACES: RefCell<Vec<Workspace>> = const { RefCell::new(Vec::new()) };
}

/// Calls `launch` with the device addresses of at least `counters` zeroed u32 counters and
/// `partial_words` f32 words of partials for `stream` (`dev`'s stream), allocating or growing
/// this thread's workspace for it first. The kernel `launch` queues must leave every counter
/// it touches at zero. Reusing the buffer saves a zeroing launch, an allocation and a free per
/// call. The buffer's stream guard is held until `launch` has queued the kernel.
pub(super) fn with_workspace<R>(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    counters: usize,
    partial_words: usize,
    launch: impl FnOnce(u64, u64) -> Result<R>,
) -> Result<R> {
    WORKSPACES.with(|cell| {
        let Ok(mut spaces) = cell.try_borrow_mut() else {
            bail!("fused-attn cuda internal: the counter workspace re-entered on one thread")
        };
        // A buffer whose stream only it still holds belongs to a device that is gone.
        spaces.retain(|w| Arc::strong_count(w.buf.stream()) > 1);
        let at = match spaces.iter().position(|w| Arc::ptr_eq(w.buf.stream(), stream)) {
            Some(at) if spaces[at].fits(counters, partial_words) => at,
            found => {
                // Grown to cover this call and every earlier one on the stream. Zeroed on
                // `stream`, before any kernel that uses it; the buffer it replaces is freed on
                // that stream after the kernels queued so far.
                let (old_counters, old_partials) = found.map_or((0, 0), |at| {
                    let old = &spaces[at];
                    (old.counters, old.buf.len() - Workspace::partials_offset(old.counters))
                });
                let counters = counters.max(old_counters).next_power_of_two().max(256);
                let len = Workspace::partials_offset(counters) + partial_words.max(old_partials);
                let fresh = Workspace { buf: dev.alloc_zeros::<u32>(len)?, counters };
                match found {
                    Some(at) => {
                        spaces[at] = fresh;
                        at
                    }
                    None => {
                        spaces.push(fresh);
                        spaces.len() - 1
                    }
                }
            }
        };
        let space = &mut spaces[at];
        let offset = Workspace::partials_offset(space.counters) as u64 * 4;
        let (ptr, _guard) = space.buf.device_ptr_mut(stream);
        launch(ptr, ptr + offset)
    })
}
