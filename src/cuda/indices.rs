//! Index tensors on the GPU (cumulative lengths, block tables, prefix ranges) read to the host
//! for their checks without waiting for candle's stream.
//!
//! src/packed.rs checks every index entry on the host before any kernel runs. Read on candle's
//! stream, as `Tensor::to_device` does, each copy waits for everything queued on that stream
//! before it: the GPU drains, then idles while the host checks the values and launches again.
//! With the index tensors on the GPU the paged decode ran at 0.55-0.77× of the contiguous
//! decode (H200, session 36's call 3), against 0.96-0.99× with them on the CPU; and
//! candle-flash-attn's callers keep them on the GPU.
//!
//! This applies only where cudarc orders streams by events: a device made with
//! `Device::new_cuda_with_stream` (its own stream: cudarc's multi-stream mode). candle's
//! default `Device::new_cuda` runs the per-thread default stream, and cudarc, with one stream
//! in the context, records no events; there a read cannot wait for the indices' writer alone,
//! so every tensor falls back to candle's stream (session 36's calls 7-9 measured that
//! fallback). Creating a stream here would switch the whole process into multi-stream mode (a
//! context synchronize, then events on every op), which a library should not do to its users.
//!
//! Here all of a call's index tensors are copied at once on a stream of their own per device,
//! into page-locked memory, with one wait for the lot. cudarc orders each copy after the last
//! write to the tensor's memory (candle's device runs in cudarc's multi-stream mode, where every
//! buffer carries a write event that a reader on another stream waits for, and a read event
//! that a later writer waits for), so the copies wait for the kernel or upload that produced
//! the indices and for nothing queued after it. Where that ordering is not kept (event tracking
//! turned off by the caller) or a tensor is not one contiguous run of its buffer, that tensor
//! is read on candle's stream, as before. A buffer allocated while the caller had event
//! tracking off (candle's `unsafe` `disable_event_tracking`) and read after turning it back on
//! carries no write event, so its copy would not wait for its producer; the values read are
//! still checked and the kernels read only checked copies, so memory stays safe, but the
//! answer would follow whatever values the copy saw.

use std::sync::{Arc, Mutex};

use candle_core::cuda_backend::cudarc::driver::{result, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice};
use candle_core::cuda_backend::{CudaDType, DeviceId};
use candle_core::{DType, Result, Storage, Tensor};

/// A device's side stream and its page-locked staging buffer (grown to the largest call's
/// indices, kept between calls).
struct Reader {
    device: DeviceId,
    stream: Arc<CudaStream>,
    staging: Option<PinnedHostSlice<u8>>,
}

/// The readers of the devices that have read indices, created at their first read: at most
/// [`KEPT_READERS`], the oldest dropped first (a program that makes a new candle `Device` per
/// request does not keep a stream per request).
static READERS: Mutex<Vec<Reader>> = Mutex::new(Vec::new());

/// How many devices' readers [`READERS`] keeps.
const KEPT_READERS: usize = 8;

/// The values of each of `ts` as i64, for those read here: u32, i32 or i64 tensors that are one
/// contiguous run of a buffer on the GPU of the first of them, in a context that orders streams
/// by events. `None` for the others, which the caller reads on candle's stream.
pub(crate) fn read_many(ts: &[&Tensor]) -> Result<Vec<Option<Vec<i64>>>> {
    let mut out: Vec<Option<Vec<i64>>> = vec![None; ts.len()];
    // Each qualifying tensor's storage (held until its copy has landed), element range, dtype
    // and byte offset in the staging buffer.
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
        if !cs.device.cuda_stream().context().is_managing_stream_synchronization() {
            continue;
        }
        device.get_or_insert_with(|| cs.device.clone());
        let at = bytes.next_multiple_of(8);
        bytes = at + (end - start) * size;
        jobs.push((i, start, end, at, t.dtype()));
        drop(storage);
    }
    let Some(device) = device else { return Ok(out) };
    let err = |what: &str, e| candle_core::Error::Msg(format!("fused-attn: reading index tensors ({what}): {e:?}"));

    let mut readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
    let at = match readers.iter().position(|r| r.device == device.id()) {
        Some(at) => at,
        None => {
            let stream = device.cuda_stream().context().new_stream().map_err(|e| err("a side stream", e))?;
            if readers.len() >= KEPT_READERS {
                readers.remove(0);
            }
            readers.push(Reader { device: device.id(), stream, staging: None });
            readers.len() - 1
        }
    };
    let reader = &mut readers[at];
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
    let stream = reader.stream.clone();

    // Every copy queued, then one wait. Each tensor's storage guard is held from its copy's
    // queuing to the wait, so that its buffer cannot be freed while the copy reads it.
    let mut held = Vec::with_capacity(jobs.len());
    for &(i, start, end, at, dtype) in &jobs {
        let (storage, _) = ts[i].storage_and_layout();
        let Storage::Cuda(cs) = &*storage else { unreachable!("checked above") };
        match dtype {
            DType::U32 => queue_copy(cs.as_cuda_slice::<u32>()?, start, end, base, at, &stream)?,
            DType::I32 => queue_copy(cs.as_cuda_slice::<i32>()?, start, end, base, at, &stream)?,
            _ => queue_copy(cs.as_cuda_slice::<i64>()?, start, end, base, at, &stream)?,
        }
        held.push(storage);
    }
    stream.synchronize().map_err(|e| err("the side stream's wait", e))?;
    drop(held);
    for &(i, start, end, at, dtype) in &jobs {
        let n = end - start;
        // SAFETY: the copy into `base + at` of `n` elements of `dtype` (8-byte aligned offsets
        // in a page-aligned buffer of at least `bytes`) has completed: the stream was
        // synchronized above, and nothing else writes the staging buffer while `readers` is
        // locked.
        out[i] = Some(unsafe {
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
    Ok(out)
}

/// Queues the copy of elements `start..end` of `slice` into the staging buffer at byte `at` on
/// `stream`, after the slice's last write (cudarc's write event), and records its read there.
fn queue_copy<T: CudaDType>(
    slice: &CudaSlice<T>,
    start: usize,
    end: usize,
    base: *mut u8,
    at: usize,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    if start > end || end > slice.len() {
        candle_core::bail!(
            "fused-attn: an index tensor's view {start}..{end} lies outside its buffer of {}",
            slice.len()
        )
    }
    let view = slice.slice(start..end);
    // The stream waits for the slice's write event here; `_read` records the read on drop,
    // after the copy is queued.
    let (src, _read) = view.device_ptr(stream);
    // SAFETY: `base + at` holds `end - start` elements of `T` within the staging buffer (sized
    // and aligned by the caller), which no one else touches until the caller's wait; `src` is
    // the device address of that many elements of a live buffer (its storage guard is held by
    // the caller until the wait); the stream is of the buffer's context.
    unsafe {
        let dst = std::slice::from_raw_parts_mut(base.add(at) as *mut T, end - start);
        result::memcpy_dtoh_async(dst, src, stream.cu_stream())
    }
    .map_err(|e| candle_core::Error::Msg(format!("fused-attn: queuing an index tensor's copy: {e:?}")))
}
