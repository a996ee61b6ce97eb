//! The GPU timing method of benches/attention.rs, in one place (examples/lab_index_read.rs
//! `--varlen` times as the bench does): each rep after an L2 flush and bracketed by CUDA
//! events on candle's stream, all queued before one synchronize and read after it, the method
//! of `triton.testing.do_bench`, which times torch. (A synchronize per rep, as `elapsed_ms`
//! does, gave the same decode medians on the H100; it is just not do_bench's method.)

use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use candle_core::cuda_backend::cudarc::driver::DriverError;
use candle_core::{DType, Device, Tensor};

/// The time of each of `reps` reps of `run` on `dev`'s stream, in ms.
pub fn cuda_rep_ms(
    dev: &candle_core::CudaDevice,
    reps: usize,
    run: &impl Fn() -> candle_core::Result<Tensor>,
) -> candle_core::Result<Vec<f64>> {
    use candle_core::backend::BackendDevice;
    // 256 MiB, past any L2 (50 MiB on the H100, 60 MiB on the H200), as do_bench uses.
    let flush = Tensor::zeros(64 << 20, DType::F32, &Device::Cuda(dev.clone()))?;
    let stream = dev.cuda_stream();
    let event_err = |e: DriverError| candle_core::Error::Msg(format!("CUDA event: {e:?}"));
    let mut events = Vec::with_capacity(reps);
    for _ in 0..reps {
        flush.zero_set()?;
        let start = stream.record_event(Some(CU_EVENT_DEFAULT)).map_err(event_err)?;
        std::hint::black_box(run()?);
        let end = stream.record_event(Some(CU_EVENT_DEFAULT)).map_err(event_err)?;
        events.push((start, end));
    }
    dev.synchronize()?;
    events.iter().map(|(start, end)| start.elapsed_ms(end).map(f64::from).map_err(event_err)).collect()
}
