//! Index tensors on the GPU (cumulative lengths, block tables, prefix ranges) read to the host
//! for their checks: all of a call's at once, with one wait, and where cudarc orders streams
//! by events, without waiting for candle's stream.
//!
//! src/packed.rs checks every index entry on the host before any kernel runs. Read on candle's
//! stream, as `Tensor::to_device` does, each copy waits for everything queued on that stream
//! before it: the GPU drains, then idles while the host checks the values and launches again.
//! With the index tensors on the GPU the paged decode ran at 0.55-0.77× of the contiguous
//! decode (H200, sessions 24 and 36), against 0.96-0.99× with them on the CPU; and
//! candle-flash-attn's callers keep them on the GPU.
//!
//! Here a call's index tensors are copied at once into page-locked memory, with one wait for
//! the lot, on one of two streams:
//! * **A side stream** (one per device), where cudarc orders streams by events: a device made
//!   with `Device::new_cuda_with_stream` (its own stream: cudarc's multi-stream mode, where
//!   every buffer carries a write event that a reader on another stream waits for, and a read
//!   event that a later writer waits for). The copies wait for the kernel or upload that
//!   produced the indices and for nothing queued after it: the paged decode with GPU indices
//!   then runs at its host-index speed (session 37, H200, (32,32,8,1,4096,128) with 16-key
//!   pages, criterion medians: 140.4 / 140.1 µs against 139.8 / 139.6 with host indices,
//!   lab/results/s37-call3/).
//! * **candle's stream** otherwise. candle's default `Device::new_cuda` runs the per-thread
//!   default stream, and cudarc, with one stream in the context, records no events: there a
//!   read cannot wait for the indices' writer alone, so the one wait drains the stream (one
//!   drain per call instead of one per tensor: that row 177.4 / 176.8 µs against 223.0 /
//!   202.9 with a wait per tensor, session 37's calls 3 and 2). Creating a stream here would
//!   switch the whole process into multi-stream mode (a context synchronize, then events on
//!   every op), which a library should not do to its users.
//! * **A copy stream** of the driver API, for a guessing call on such a device
//!   ([`stage_all_on_stream`], src/cuda/speculation.rs): made with `cuStreamCreate`, so cudarc
//!   never learns of it and stays in single-stream mode, and forked off candle's stream by an
//!   event, so its copies wait for everything queued there before them (the indices' writers)
//!   but nothing queued after them waits for the copies. The caller queues its kernels on
//!   candle's stream right after, then polls the event recorded after the copies: the GPU
//!   runs the kernels while the host waits. Paged decode with GPU indices at 0.978-0.995× of
//!   the contiguous decode, against 0.71-0.84× draining (H200, lab/results/s42-call1 and -2;
//!   the copies on candle's stream, ahead of the kernels, gave 0.84-0.91×).
//!
//! A tensor that is not one contiguous run of its buffer, or not u32/i32/i64, is left to the
//! caller (read with `to_device` on candle's stream). A buffer allocated while the caller had
//! event tracking off (candle's `unsafe` `disable_event_tracking`) and read after turning it
//! back on carries no write event, so its side-stream copy would not wait for its producer;
//! the values read are still checked and the kernels read only checked copies, so memory stays
//! safe, but the answer would follow whatever values the copy saw.

use std::sync::{Arc, Mutex};

use candle_core::cuda_backend::cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice,
};
use candle_core::cuda_backend::{CudaDType, DeviceId};
use candle_core::{DType, Result, Storage, StorageRef, Tensor};

/// A device's page-locked staging buffer (grown to the largest call's indices, kept between
/// calls), its side stream, made at the first side read, and the event that marks a
/// speculative read's copies done (see [`Staged::finish_polling`]).
///
/// A call takes the staging buffer and the event out for the time of its read and puts them
/// back after (the larger buffer wins): a second thread reading on the same device meanwhile
/// makes its own.
struct Reader {
    side: Option<Arc<CudaStream>>,
    staging: Option<PinnedHostSlice<u8>>,
    event: Option<CudaEvent>,
    /// A speculative read's copy stream and the event that forks it off candle's stream.
    copier: Option<(CopyStream, CudaEvent)>,
}

/// A stream of the driver API that cudarc does not know of: making one through cudarc would
/// switch its context into multi-stream mode (events on every op of the user's program). Only
/// index copies run on it, ordered after candle's stream by an event, and waited for by the
/// host before their buffers can be reused.
struct CopyStream {
    ctx: Arc<CudaContext>,
    raw: sys::CUstream,
}

// SAFETY: a CUDA stream handle may be used from any thread once its context is bound there
// (every use binds it); the handle is only used under the device reader's lock or by the one
// call that took it out of the reader.
unsafe impl Send for CopyStream {}

impl CopyStream {
    fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        ctx.bind_to_thread().map_err(|e| err("binding the context", e))?;
        let raw =
            result::stream::create(result::stream::StreamKind::NonBlocking).map_err(|e| err("a copy stream", e))?;
        Ok(Self { ctx: ctx.clone(), raw })
    }
}

impl Drop for CopyStream {
    fn drop(&mut self) {
        // SAFETY: `raw` was made by `cuStreamCreate` in `ctx` and is destroyed once, here; work
        // still queued on it completes first (the driver's contract for `cuStreamDestroy`).
        let _ = self.ctx.bind_to_thread().map(|_| unsafe { result::stream::destroy(self.raw) });
    }
}

/// The readers of the devices that have read indices, created at their first read: at most
/// [`KEPT_READERS`], the oldest dropped first (a program that makes a new candle `Device` per
/// request does not keep a stream per request). Each has a lock of its own, held only while a
/// call takes or returns its parts, so that a thread waiting for one GPU's copies holds up no
/// other call.
static READERS: Mutex<Vec<(DeviceId, Arc<Mutex<Reader>>)>> = Mutex::new(Vec::new());

/// How many devices' readers [`READERS`] keeps.
const KEPT_READERS: usize = 8;

/// The indices read by [`read_many`]: each tensor's values as i64 (`None` for those left to
/// the caller), and whether they were read on the side stream.
pub(crate) struct Read {
    pub values: Vec<Option<Vec<i64>>>,
    pub side: bool,
}

/// A tensor's copy: its index in the call's list, its element range, its byte offset in the
/// staging buffer and its dtype.
type Job = (usize, usize, usize, usize, DType);

/// A call's index copies, queued into page-locked staging and not yet waited for. Holds each
/// copied tensor's storage guard, so that no buffer is freed while its copy reads it. Dropped
/// unfinished (an error, a panic in the caller), it still waits for its copies before the
/// staging buffer is reused or freed.
pub(crate) struct Staged<'a> {
    reader: Arc<Mutex<Reader>>,
    staging: Option<PinnedHostSlice<u8>>,
    /// Recorded after the copies when the caller asked for it ([`stage_all_on_stream`]).
    event: Option<CudaEvent>,
    /// The copy stream, taken from the reader, when the copies run on it.
    copier: Option<(CopyStream, CudaEvent)>,
    /// The stream the copies run on: `stream`'s, or the copy stream's.
    copy_on: sys::CUstream,
    base: *mut u8,
    jobs: Vec<Job>,
    held: Vec<StorageRef<'a>>,
    /// The device address of the last non-empty copy's first element (the probe's source).
    probe: Option<sys::CUdeviceptr>,
    stream: Arc<CudaStream>,
    side: bool,
    /// How many tensors the caller passed.
    len: usize,
}

fn err(what: &str, e: impl std::fmt::Debug) -> candle_core::Error {
    candle_core::Error::Msg(format!("fused-attn: reading index tensors ({what}): {e:?}"))
}

/// The values of each of `ts` as i64, for those read here: u32, i32 or i64 tensors that are one
/// contiguous run of a buffer on the GPU of the first of them. `None` for the others, which the
/// caller reads on candle's stream.
pub(crate) fn read_many(ts: &[&Tensor]) -> Result<Read> {
    match stage(ts, true, None)? {
        None => Ok(Read { values: vec![None; ts.len()], side: false }),
        Some(mut staged) => {
            staged.wait_probe()?;
            Ok(staged.values())
        }
    }
}

/// Whether `t` lives on a CUDA device whose cudarc context records no events (single-stream
/// mode: candle's default `Device::new_cuda`), where [`read_many`] drains candle's stream.
pub(crate) fn drains(t: &Tensor) -> bool {
    match &*t.storage_and_layout().0 {
        Storage::Cuda(cs) => !cs.device.cuda_stream().context().is_managing_stream_synchronization(),
        _ => false,
    }
}

/// Queues the copies of every one of `ts` on candle's stream and records an event after them,
/// without waiting: for a speculative read (src/op.rs `with_indices`), whose caller queues its
/// kernels behind the copies before it waits ([`Staged::finish_polling`]). `None` unless every
/// tensor can be read here (u32/i32/i64, one contiguous run, on the first one's GPU) and that
/// device drains ([`drains`]).
pub(crate) fn stage_all_on_stream<'a>(ts: &[&'a Tensor], fork: bool) -> Result<Option<Staged<'a>>> {
    match stage(ts, false, Some(fork))? {
        Some(s) if s.jobs.len() == ts.len() && !s.side => Ok(Some(s)),
        _ => Ok(None), // dropped: waits for what it queued
    }
}

/// Queues the copies of those of `ts` that can be read here; `allow_side`: on the side stream
/// where the device's context orders streams by events; `mark`: records an event after the
/// copies, and `Some(true)` runs them on the device's copy stream, forked off candle's stream
/// (they then wait for everything queued there so far, and the work queued after them there
/// does not wait for them).
fn stage<'a>(ts: &[&'a Tensor], allow_side: bool, mark: Option<bool>) -> Result<Option<Staged<'a>>> {
    let mut jobs: Vec<Job> = Vec::new();
    let mut bytes = 0usize;
    let mut device: Option<candle_core::CudaDevice> = None;
    for (i, t) in ts.iter().enumerate() {
        let size = match t.dtype() {
            DType::U32 | DType::I32 => 4,
            DType::I64 => 8,
            _ => continue,
        };
        let (storage, layout) = t.storage_and_layout();
        let Storage::Cuda(cs) = &*storage else { continue };
        let Some((start, end)) = layout.contiguous_offsets() else { continue };
        if device.as_ref().is_some_and(|d| d.id() != cs.device.id()) {
            continue;
        }
        device.get_or_insert_with(|| cs.device.clone());
        let at = bytes.next_multiple_of(8);
        bytes = at + (end - start) * size;
        jobs.push((i, start, end, at, t.dtype()));
    }
    let Some(device) = device else { return Ok(None) };
    let ctx = device.cuda_stream().context().clone();
    let side = allow_side && ctx.is_managing_stream_synchronization();

    let reader = {
        let mut readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
        match readers.iter().find(|(id, _)| *id == device.id()) {
            Some((_, r)) => r.clone(),
            None => {
                if readers.len() >= KEPT_READERS {
                    readers.remove(0);
                }
                let r = Arc::new(Mutex::new(Reader { side: None, staging: None, event: None, copier: None }));
                readers.push((device.id(), r.clone()));
                r
            }
        }
    };
    let (stream, staging, event, copier) = {
        let mut r = reader.lock().unwrap_or_else(|e| e.into_inner());
        let stream = if side {
            if r.side.is_none() {
                r.side = Some(ctx.new_stream().map_err(|e| err("a side stream", e))?);
            }
            r.side.clone().expect("made above")
        } else {
            device.cuda_stream()
        };
        let copier = if mark == Some(true) { r.copier.take() } else { None };
        (stream, r.staging.take(), if mark.is_some() { r.event.take() } else { None }, copier)
    };
    let mut staging = match staging {
        Some(s) if s.len() >= bytes => s,
        _ => {
            let cap = bytes.next_power_of_two().max(4096);
            // SAFETY: page-locked host memory of `cap` bytes, cached (no write-combining: the
            // host reads it); its contents are written by the copies below before they are read.
            unsafe { ctx.alloc_pinned_with_flags::<u8>(cap, 0) }.map_err(|e| err("page-locked staging", e))?
        }
    };
    let base = staging.as_mut_ptr().map_err(|e| err("page-locked staging", e))?;
    let mut staged = Staged {
        reader,
        staging: Some(staging),
        event: None,
        copier: None,
        copy_on: stream.cu_stream(),
        base,
        jobs: Vec::with_capacity(jobs.len()),
        held: Vec::with_capacity(jobs.len()),
        probe: None,
        stream,
        side,
        len: ts.len(),
    };
    // On an error below, `staged` is dropped: it waits for the copies queued so far.
    if mark == Some(true) {
        let (copier, fork) = match copier {
            Some(c) => c,
            None => (CopyStream::new(&ctx)?, ctx.new_event(None).map_err(|e| err("an event", e))?),
        };
        fork.record(&staged.stream).map_err(|e| err("recording an event", e))?;
        // SAFETY: both handles are live in the context bound by `record` above; the copy
        // stream waits for everything queued on candle's stream before the event.
        unsafe {
            result::stream::wait_event(copier.raw, fork.cu_event(), sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
        }
        .map_err(|e| err("forking the copy stream", e))?;
        staged.copy_on = copier.raw;
        staged.copier = Some((copier, fork));
    }
    for (i, start, end, at, dtype) in jobs {
        let (storage, _) = ts[i].storage_and_layout();
        let Storage::Cuda(cs) = &*storage else { unreachable!("checked above") };
        let src = match dtype {
            DType::U32 => queue_copy(cs.as_cuda_slice::<u32>()?, start, end, base, at, &staged.stream, staged.copy_on)?,
            DType::I32 => queue_copy(cs.as_cuda_slice::<i32>()?, start, end, base, at, &staged.stream, staged.copy_on)?,
            _ => queue_copy(cs.as_cuda_slice::<i64>()?, start, end, base, at, &staged.stream, staged.copy_on)?,
        };
        if end > start {
            staged.probe = Some(src);
        }
        staged.held.push(storage);
        staged.jobs.push((i, start, end, at, dtype));
    }
    if mark.is_some() {
        let event = match event {
            Some(e) => e,
            None => ctx.new_event(None).map_err(|e| err("an event", e))?,
        };
        // SAFETY: the event and the stream are live handles of the device's context, bound
        // to this thread by the calls above.
        unsafe { result::event::record(event.cu_event(), staged.copy_on) }.map_err(|e| err("recording an event", e))?;
        staged.event = Some(event);
    }
    Ok(Some(staged))
}

impl Staged<'_> {
    /// Waits for the copies with one more copy, of a tensor's first element into pageable
    /// memory, which the driver returns from only once it has completed, so after every copy
    /// queued before it on the stream. Not `cuStreamSynchronize`: that is also where the CUDA
    /// driver hands the stream-ordered pool's free memory back to the system (release
    /// threshold 0, its default), so the call's output allocation right after it mapped fresh
    /// memory again; with the drain exposing it, the varlen bench's GPU-index row took 12.7 ms
    /// against 10.5 with this wait (H200, examples/lab_index_read --varlen,
    /// lab/results/s38-call6). candle's own device-to-host reads wait the same way.
    fn wait_probe(&mut self) -> Result<()> {
        if let Some(src) = self.probe {
            let mut probe = [0u8; 4];
            // SAFETY: `src` is the device address of at least 4 bytes (a u32/i32/i64 element)
            // of a buffer whose storage guard `self.held` keeps alive until after this returns;
            // `probe` is 4 writable bytes; the copies' stream is of the buffer's context.
            let waited = unsafe { result::memcpy_dtoh_async(&mut probe[..], src, self.copy_on) };
            if let Err(e) = waited {
                // The copies may still be running: the staging buffer is never handed back
                // nor freed.
                std::mem::forget(self.staging.take());
                return Err(err("the copies' wait", e));
            }
        }
        Ok(())
    }

    /// Waits for the copies by polling the event recorded after them, so that the work queued
    /// behind them (the caller's speculative kernels) keeps the GPU busy meanwhile: the host
    /// spins, then yields. Not `cuEventSynchronize`, a synchronize like `cuStreamSynchronize`
    /// for the stream-ordered pool (see [`Self::wait_probe`]).
    pub(crate) fn finish_polling(mut self) -> Result<Read> {
        let Some(event) = self.event.as_ref() else {
            self.wait_probe()?;
            return Ok(self.values());
        };
        let mut spins = 0u32;
        loop {
            match event.try_is_complete() {
                Ok(true) => break,
                Ok(false) => {
                    spins = spins.saturating_add(1);
                    if spins < 4096 {
                        std::hint::spin_loop()
                    } else {
                        std::thread::yield_now()
                    }
                }
                Err(e) => {
                    std::mem::forget(self.staging.take());
                    return Err(err("the copies' event", e));
                }
            }
        }
        Ok(self.values())
    }

    /// The copied values (the caller waited for the copies), one entry per tensor passed; the
    /// staging buffer and the event handed back to the device's reader.
    fn values(mut self) -> Read {
        let mut values: Vec<Option<Vec<i64>>> = vec![None; self.len];
        for &(i, start, end, at, dtype) in &self.jobs {
            let n = end - start;
            // SAFETY: the copy into `base + at` of `n` elements of `dtype` (8-byte aligned
            // offsets in a page-aligned buffer of at least the jobs' bytes) has completed (the
            // callers waited for it), and no one else uses this staging buffer: it was taken
            // out of the device's reader for this call.
            values[i] = Some(unsafe {
                let p = self.base.add(at);
                match dtype {
                    DType::U32 => std::slice::from_raw_parts(p as *const u32, n).iter().map(|&x| x as i64).collect(),
                    DType::I32 => std::slice::from_raw_parts(p as *const i32, n).iter().map(|&x| x as i64).collect(),
                    _ => std::slice::from_raw_parts(p as *const i64, n).to_vec(),
                }
            });
        }
        self.held.clear();
        self.give_back();
        Read { values, side: self.side }
    }

    /// Hands the staging buffer (the larger one is kept) and the event back to the device's
    /// reader. Only once the copies into the buffer have completed.
    fn give_back(&mut self) {
        let mut r = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = self.staging.take() {
            if r.staging.as_ref().is_none_or(|old| old.len() < s.len()) {
                r.staging = Some(s);
            }
        }
        if let Some(e) = self.event.take() {
            r.event = Some(e);
        }
        if let Some(c) = self.copier.take() {
            r.copier = Some(c);
        }
    }
}

impl Drop for Staged<'_> {
    /// Unfinished: waits for the copies before the staging buffer can be reused or freed.
    fn drop(&mut self) {
        if self.staging.is_some() && self.wait_probe().is_ok() {
            self.give_back();
        }
    }
}

/// Queues the copy of elements `start..end` of `slice` into the staging buffer at byte `at` on
/// `copy_on`: `stream`'s own handle, after the slice's last write (in multi-stream mode,
/// cudarc's write event; on the slice's own stream, stream order), with its read recorded
/// there; or the copy stream, forked off `stream` (single-stream mode, where cudarc records no
/// events) by the caller. Returns the device address of element `start`.
fn queue_copy<T: CudaDType>(
    slice: &CudaSlice<T>,
    start: usize,
    end: usize,
    base: *mut u8,
    at: usize,
    stream: &Arc<CudaStream>,
    copy_on: sys::CUstream,
) -> Result<sys::CUdeviceptr> {
    if start > end || end > slice.len() {
        candle_core::bail!(
            "fused-attn: an index tensor's view {start}..{end} lies outside its buffer of {}",
            slice.len()
        )
    }
    let view = slice.slice(start..end);
    // The stream waits for the slice's write event here (multi-stream mode); `_read` records
    // the read on drop, after the copy is queued.
    let (src, _read) = view.device_ptr(stream);
    // SAFETY: `base + at` holds `end - start` elements of `T` within the staging buffer (sized
    // and aligned by the caller), which no one else touches until the caller's wait; `src` is
    // the device address of that many elements of a live buffer (its storage guard is held by
    // the caller until the wait); `copy_on` is a stream of the buffer's context.
    unsafe {
        let dst = std::slice::from_raw_parts_mut(base.add(at) as *mut T, end - start);
        result::memcpy_dtoh_async(dst, src, copy_on)
    }
    .map_err(|e| candle_core::Error::Msg(format!("fused-attn: queuing an index tensor's copy: {e:?}")))?;
    Ok(src)
}
