//! The GPU timing method of benches/attention.rs, in one place (examples/lab_index_read.rs
//! `--varlen` times as the bench does): each rep after an L2 flush and bracketed by CUDA
//! events on candle's stream, all queued before one synchronize and read after it, the method
//! of `triton.testing.do_bench`, which times torch. (A synchronize per rep, as `elapsed_ms`
//! does, gave the same decode medians on the H100; it is just not do_bench's method.)
//!
//! The flush (`FUSED_ATTN_BENCH_FLUSH`): do_bench zeroes 256 MiB of int32 with torch's
//! `zero_`, a vectorized elementwise kernel; the default here, `torch`, launches the same
//! shape from the PTX below (16-byte stores, 128-thread blocks, 2 stores a thread: what ncu
//! shows torch 2.11 launching, 65 536 blocks and 524 288 warp stores). `candle` is candle's
//! `zero_set` (its `const_set_f32` kernel: 4-byte stores, 1 024-thread blocks), which the bench
//! used until session 44. Both write the same bytes, and session 44 timed ours and cuDNN after
//! each (lab/README.md): level within each row's spread on both sides. The default only makes
//! the method the peers' own. `FUSED_ATTN_BENCH_FLUSH_SHAPE=THREADSxVECS` sets the torch
//! flush's block size and stores a thread; scripts/bench_torch.py `--flush` takes the same two
//! names. `FUSED_ATTN_BENCH_DROP=after` keeps each rep's output until its end event is queued
//! (default `inside`: dropped before it, as do_bench drops its function's result).

use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use candle_core::{DType, Device, Tensor};

/// 256 MiB, past any L2 (50 MiB on the H100, 60 MiB on the H200), as do_bench uses.
const FLUSH_BYTES: usize = 256 << 20;

/// Zeroes `n16` 16-byte chunks at `ptr`: block b's thread t writes chunks
/// b·THREADS·VECS + v·THREADS + t for v < VECS (torch's vectorized kernel's order).
const FLUSH_PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry fattn_bench_flush(.param .u64 p_ptr, .param .u64 p_n16, .param .u32 p_vecs)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p_ptr];
    ld.param.u64 %rd2, [p_n16];
    ld.param.u32 %r5, [p_vecs];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.lo.u32 %r6, %r2, %r5;
    cvt.u64.u32 %rd4, %r3;
    mad.wide.u32 %rd3, %r1, %r6, %rd4;
    cvt.u64.u32 %rd7, %r2;
    mov.u32 %r4, 0;
    mov.u32 %r7, 0;
LOOP:
    setp.ge.u32 %p2, %r7, %r5;
    @%p2 bra DONE;
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra DONE;
    shl.b64 %rd5, %rd3, 4;
    add.s64 %rd6, %rd1, %rd5;
    st.global.v4.u32 [%rd6], {%r4, %r4, %r4, %r4};
    add.s64 %rd3, %rd3, %rd7;
    add.u32 %r7, %r7, 1;
    bra LOOP;
DONE:
    ret;
}
"#;

/// The L2 flush before each rep (module docs).
enum Flush {
    /// torch's `zero_` as do_bench runs it: 16-byte stores, `threads`-thread blocks, `vecs`
    /// stores a thread.
    Torch { buf: Tensor, func: CudaFunction, stream: std::sync::Arc<CudaStream>, threads: u32, vecs: u32 },
    /// candle's `zero_set` (`const_set_f32`).
    Candle(Tensor),
}

impl Flush {
    fn new(dev: &candle_core::CudaDevice) -> candle_core::Result<Self> {
        let buf = Tensor::zeros(FLUSH_BYTES / 4, DType::F32, &Device::Cuda(dev.clone()))?;
        let kind = std::env::var("FUSED_ATTN_BENCH_FLUSH").unwrap_or_else(|_| "torch".into());
        match kind.as_str() {
            "candle" => Ok(Self::Candle(buf)),
            "torch" => {
                let shape = std::env::var("FUSED_ATTN_BENCH_FLUSH_SHAPE").unwrap_or_else(|_| "128x2".into());
                let parsed =
                    shape.split_once('x').and_then(|(t, v)| Some((t.parse::<u32>().ok()?, v.parse::<u32>().ok()?)));
                let (threads, vecs) = match parsed {
                    Some((t, v)) if (32..=1024).contains(&t) && t % 32 == 0 && (1..=64).contains(&v) => (t, v),
                    _ => candle_core::bail!("FUSED_ATTN_BENCH_FLUSH_SHAPE={shape}: want THREADSxVECS, THREADS a multiple of 32 in 32..=1024, VECS in 1..=64"),
                };
                let func = dev.get_or_load_custom_func("fattn_bench_flush", "fattn_bench_flush", FLUSH_PTX)?;
                let func = func.into_cuda_function();
                Ok(Self::Torch { buf, func, stream: dev.cuda_stream(), threads, vecs })
            }
            other => candle_core::bail!("FUSED_ATTN_BENCH_FLUSH={other}: want torch or candle"),
        }
    }

    fn run(&self) -> candle_core::Result<()> {
        match self {
            Self::Candle(buf) => buf.zero_set(),
            Self::Torch { buf, func, stream, threads, vecs } => {
                let (storage, layout) = buf.storage_and_layout();
                let candle_core::Storage::Cuda(cuda) = &*storage else {
                    candle_core::bail!("the flush buffer is not on the GPU")
                };
                let slice = cuda.as_cuda_slice::<f32>()?.slice(layout.start_offset()..);
                let n16 = (FLUSH_BYTES / 16) as u64;
                let per_block = u64::from(threads * vecs);
                let blocks = n16.div_ceil(per_block) as u32;
                let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (*threads, 1, 1), shared_mem_bytes: 0 };
                let mut builder = stream.launch_builder(func);
                builder.arg(&slice).arg(&n16).arg(vecs);
                // SAFETY: the kernel writes n16 16-byte chunks from the start of `slice`, which
                // holds FLUSH_BYTES = 16·n16 bytes (the buffer is ours and contiguous); its three
                // parameters are pushed in the PTX's order and types (u64 pointer, u64, u32).
                unsafe { builder.launch(cfg) }
                    .map(|_| ())
                    .map_err(|e| candle_core::Error::Msg(format!("bench flush launch: {e:?}")))
            }
        }
    }
}

/// The time of each of `reps` reps of `run` on `dev`'s stream, in ms.
pub fn cuda_rep_ms(
    dev: &candle_core::CudaDevice,
    reps: usize,
    run: &impl Fn() -> candle_core::Result<Tensor>,
) -> candle_core::Result<Vec<f64>> {
    use candle_core::backend::BackendDevice;
    let flush = Flush::new(dev)?;
    let drop_after = match std::env::var("FUSED_ATTN_BENCH_DROP").as_deref() {
        Err(_) | Ok("inside") => false,
        Ok("after") => true,
        Ok(other) => candle_core::bail!("FUSED_ATTN_BENCH_DROP={other}: want inside or after"),
    };
    let stream = dev.cuda_stream();
    let event_err = |e: DriverError| candle_core::Error::Msg(format!("CUDA event: {e:?}"));
    let mut events = Vec::with_capacity(reps);
    for _ in 0..reps {
        flush.run()?;
        let start = stream.record_event(Some(CU_EVENT_DEFAULT)).map_err(event_err)?;
        let out = std::hint::black_box(run()?);
        // Dropped inside the window by default, as do_bench drops what its function returns
        // (a stream-ordered free here, `cuMemFreeAsync`; a host-only free in torch's caching
        // allocator); `FUSED_ATTN_BENCH_DROP=after` holds it until the end event is queued.
        let held = if drop_after { Some(out) } else { None };
        let end = stream.record_event(Some(CU_EVENT_DEFAULT)).map_err(event_err)?;
        drop(held);
        events.push((start, end));
    }
    dev.synchronize()?;
    events.iter().map(|(start, end)| start.elapsed_ms(end).map(f64::from).map_err(event_err)).collect()
}
