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
//!
//! A tensor that is not one contiguous run of its buffer, or not u32/i32/i64, is left to the
//! caller (read with `to_device` on candle's stream). A buffer allocated while the caller had
//! event tracking off (candle's `unsafe` `disable_event_tracking`) and read after turning it
//! back on carries no write event, so its side-stream copy would not wait for its producer;
//! the values read are still checked and the kernels read only checked copies, so memory stays
//! safe, but the answer would follow whatever values the copy saw.

use std::sync::{Arc, Mutex};

use candle_core::cuda_backend::cudarc::driver::{result, sys, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice};
use candle_core::cuda_backend::{CudaDType, DeviceId};
use candle_core::{DType, Result, Storage, Tensor};

/// A device's page-locked staging buffer (grown to the largest call's indices, kept between
/// calls) and its side stream, made at the first side read.
struct Reader {
    side: Option<Arc<CudaStream>>,
    staging: Option<PinnedHostSlice<u8>>,
}

/// The readers of the devices that have read indices, created at their first read: at most
/// [`KEPT_READERS`], the oldest dropped first (a program that makes a new candle `Device` per
/// request does not keep a stream per request). Each has a lock of its own, so that a thread
/// waiting for one GPU's copies does not hold up another GPU's calls.
static READERS: Mutex<Vec<(DeviceId, Arc<Mutex<Reader>>)>> = Mutex::new(Vec::new());

/// How many devices' readers [`READERS`] keeps.
const KEPT_READERS: usize = 8;

/// The indices read by [`read_many`]: each tensor's values as i64 (`None` for those left to
/// the caller), and whether they were read on the side stream.
pub(crate) struct Read {
    pub values: Vec<Option<Vec<i64>>>,
    pub side: bool,
}

/// The values of each of `ts` as i64, for those read here: u32, i32 or i64 tensors that are one
/// contiguous run of a buffer on the GPU of the first of them. `None` for the others, which the
/// caller reads on candle's stream.
pub(crate) fn read_many(ts: &[&Tensor]) -> Result<Read> {
    let mut values: Vec<Option<Vec<i64>>> = vec![None; ts.len()];
    // Each qualifying tensor's element range, dtype and byte offset in the staging buffer.
    let mut jobs = Vec::new();
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
    let Some(device) = device else { return Ok(Read { values, side: false }) };
    let err = |what: &str, e| candle_core::Error::Msg(format!("fused-attn: reading index tensors ({what}): {e:?}"));
    let side = device.cuda_stream().context().is_managing_stream_synchronization();

    let reader = {
        let mut readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
        match readers.iter().find(|(id, _)| *id == device.id()) {
            Some((_, r)) => r.clone(),
            None => {
                if readers.len() >= KEPT_READERS {
                    readers.remove(0);
                }
                let r = Arc::new(Mutex::new(Reader { side: None, staging: None }));
                readers.push((device.id(), r.clone()));
                r
            }
        }
    };
    let mut reader = reader.lock().unwrap_or_else(|e| e.into_inner());
    let stream = if side {
        if reader.side.is_none() {
            reader.side = Some(device.cuda_stream().context().new_stream().map_err(|e| err("a side stream", e))?);
        }
        reader.side.clone().expect("made above")
    } else {
        device.cuda_stream()
    };
    if reader.staging.as_ref().is_none_or(|s| s.len() < bytes) {
        let cap = bytes.next_power_of_two().max(4096);
        // SAFETY: page-locked host memory of `cap` bytes, cached (no write-combining: the host
        // reads it); its contents are written by the copies below before they are read.
        let s = unsafe { device.cuda_stream().context().alloc_pinned_with_flags::<u8>(cap, 0) }
            .map_err(|e| err("page-locked staging", e))?;
        reader.staging = Some(s);
    }
    let staging = reader.staging.as_mut().expect("staging allocated above");
    let base = staging.as_mut_ptr().map_err(|e| err("page-locked staging", e))?;

    // Every copy queued, then one wait. Each tensor's storage guard is held from its copy's
    // queuing to the wait, so that its buffer cannot be freed while the copy reads it.
    let mut held = Vec::with_capacity(jobs.len());
    // The device address of each non-empty copy's first element.
    let mut probes = Vec::with_capacity(jobs.len());
    for &(i, start, end, at, dtype) in &jobs {
        let (storage, _) = ts[i].storage_and_layout();
        let Storage::Cuda(cs) = &*storage else { unreachable!("checked above") };
        let src = match dtype {
            DType::U32 => queue_copy(cs.as_cuda_slice::<u32>()?, start, end, base, at, &stream)?,
            DType::I32 => queue_copy(cs.as_cuda_slice::<i32>()?, start, end, base, at, &stream)?,
            _ => queue_copy(cs.as_cuda_slice::<i64>()?, start, end, base, at, &stream)?,
        };
        probes.extend((end > start).then_some(src));
        held.push(storage);
    }
    // The wait: one more copy, of a tensor's first element into pageable memory, which the
    // driver returns from only once it has completed, so after every copy queued before it on
    // the stream. Not `cuStreamSynchronize`: that is also where the CUDA driver hands the
    // stream-ordered pool's free memory back to the system (release threshold 0, its default),
    // so the call's output allocation right after it mapped fresh memory again; with the
    // drain exposing it, the varlen bench's GPU-index row took 12.7 ms against 10.5 with this
    // wait (H200, examples/lab_index_read --varlen, lab/results/s38-call6). candle's own
    // device-to-host reads wait the same way.
    if let Some(&src) = probes.last() {
        let mut probe = [0u8; 4];
        // SAFETY: `src` is the device address of at least 4 bytes (a u32/i32/i64 element) of a
        // buffer whose storage guard `held` keeps alive until after this returns; `probe` is
        // 4 writable bytes; the stream is of the buffer's context.
        unsafe { result::memcpy_dtoh_async(&mut probe[..], src, stream.cu_stream()) }
            .map_err(|e| err("the copies' wait", e))?;
    }
    drop(held);
    for &(i, start, end, at, dtype) in &jobs {
        let n = end - start;
        // SAFETY: the copy into `base + at` of `n` elements of `dtype` (8-byte aligned offsets
        // in a page-aligned buffer of at least `bytes`) has completed: the stream was
        // waited for above (the probe copy), and nothing else writes the staging buffer while this device's
        // reader is locked.
        values[i] = Some(unsafe {
            match dtype {
                DType::U32 => {
                    std::slice::from_raw_parts(base.add(at) as *const u32, n).iter().map(|&x| x as i64).collect()
                }
                DType::I32 => {
                    std::slice::from_raw_parts(base.add(at) as *const i32, n).iter().map(|&x| x as i64).collect()
                }
                _ => std::slice::from_raw_parts(base.add(at) as *const i64, n).to_vec(),
            }
        });
    }
    Ok(Read { values, side })
}

/// Queues the copy of elements `start..end` of `slice` into the staging buffer at byte `at` on
/// `stream`, after the slice's last write (in multi-stream mode, cudarc's write event; on the
/// slice's own stream, stream order), and records its read there. Returns the device address
/// of element `start`.
fn queue_copy<T: CudaDType>(
    slice: &CudaSlice<T>,
    start: usize,
    end: usize,
    base: *mut u8,
    at: usize,
    stream: &Arc<CudaStream>,
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
    // the caller until the wait); the stream is of the buffer's context.
    unsafe {
        let dst = std::slice::from_raw_parts_mut(base.add(at) as *mut T, end - start);
        result::memcpy_dtoh_async(dst, src, stream.cu_stream())
    }
    .map_err(|e| candle_core::Error::Msg(format!("fused-attn: queuing an index tensor's copy: {e:?}")))?;
    Ok(src)
}
