//! Lab: where a paged decode call's host time goes when its index tensors live on the GPU
//! (src/cuda/indices.rs). One (32, 32, 8, 1, 4096, 128) bf16 paged decode (16-key pages, a
//! shuffled block table), its index tensors on the CPU (`hostidx`) or on the GPU (`devidx`),
//! and for each:
//! * `host`: the host time of one call (Instant around it) with the GPU idle before it, median
//!   of 200 (the GPU synchronized before and after each);
//! * `burst`: wall time per call of 32 calls queued back to back (a model's layers), GPU
//!   synchronized before and after, median of 20 bursts;
//! * `busy`: the same 32 calls queued behind ~2 ms of matmuls, wall per call, median of 20;
//!
//! then the machine's floors: a synchronize of an idle device, and a 4-byte device-to-host
//! read through candle (`to_vec1`) on an idle device, medians of 200.
//! By default a call's GPU index tensors are read together with one wait (`batched`);
//! `FUSED_ATTN_INDEX_READ=stream` reads each on candle's stream with a wait of its own (the
//! path before session 37). `--with-stream` makes the device with
//! `Device::new_cuda_with_stream` (a stream of its own, cudarc's multi-stream mode, where the
//! batched read runs on a side stream ordered after the indices' writer); the default,
//! `Device::new_cuda`, runs the per-thread default stream in single-stream mode, where cudarc
//! records no events and the batched read waits on candle's stream.
//!
//! `--varlen` times the CUDA varlen bench's prefill batch instead (64 sequences of 100-4000
//! tokens, 32 / 8 heads, d128, bf16; benches/common/varlen.rs), its cumulative lengths on the
//! CPU (`hostidx`), on the GPU (`devidx`), and on the CPU after a synchronize of the device
//! (`hostidx+sync`: a drain without any index read), each as the bench times it (a 256 MiB
//! L2 flush, then CUDA events around the call; 10 reps queued, one synchronize; median of the
//! event times) and as the host time of one call on an idle GPU (median of 10).
//! ```text
//! cargo run --release --features cuda --example lab_index_read [-- --with-stream] [--varlen]
//! FUSED_ATTN_INDEX_READ=stream cargo run --release --features cuda --example lab_index_read [-- --with-stream]
//! ```

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention_varlen, AttnParams, Varlen};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(feature = "cuda")]
#[path = "../benches/common/do_bench.rs"]
mod do_bench;
#[path = "../benches/common/varlen.rs"]
mod varlen;

/// The host time of each of `n` calls, in µs, every one on an idle GPU (synchronized before it).
fn idle_host_us(dev: &Device, n: usize, call: &impl Fn() -> Result<Tensor>) -> Result<Vec<f64>> {
    let mut host = Vec::with_capacity(n);
    for _ in 0..n {
        dev.synchronize()?;
        let t = Instant::now();
        let out = call()?;
        host.push(t.elapsed().as_secs_f64() * 1e6);
        drop(out);
    }
    Ok(host)
}

fn main() -> Result<()> {
    let with_stream = std::env::args().any(|a| a == "--with-stream");
    let dev = if with_stream { Device::new_cuda_with_stream(0)? } else { Device::new_cuda(0)? };
    if std::env::args().any(|a| a == "--varlen") {
        return varlen_prefill(&dev, with_stream);
    }
    let (b, h, hkv, d, sk, page) = (32usize, 32usize, 8usize, 128usize, 4096usize, 16usize);
    let blocks = b * sk / page;
    let table: Vec<u32> = (0..blocks).map(|i| ((i * 2654435761usize) % blocks) as u32).collect();
    let cu_q: Vec<u32> = (0..=b as u32).collect();
    let cu_k: Vec<u32> = (0..=b as u32).map(|i| i * sk as u32).collect();
    let randn = |shape: &[usize]| Tensor::randn(0f32, 1.0, shape, &dev)?.to_dtype(DType::BF16);
    let q = randn(&[b, h, d])?;
    let (k, v) = (randn(&[blocks, page, hkv, d])?, randn(&[blocks, page, hkv, d])?);
    let params = AttnParams::new(1.0 / (d as f32).sqrt());
    let square = Tensor::randn(0f32, 1.0 / 64.0, (4096, 4096), &dev)?;
    let mode = format!(
        "{}{}",
        std::env::var("FUSED_ATTN_INDEX_READ").unwrap_or_else(|_| "batched".into()),
        if with_stream { " with-stream" } else { " default-device" }
    );
    for (name, idx_dev) in [("hostidx", Device::Cpu), ("devidx", dev.clone())] {
        let vl = Varlen::new(&Tensor::new(cu_q.as_slice(), &idx_dev)?, &Tensor::new(cu_k.as_slice(), &idx_dev)?, 1, sk)
            .paged(&Tensor::from_vec(table.clone(), (b, sk / page), &idx_dev)?, page);
        let call = || attention_varlen(&q, &k, &v, &vl, &params);
        for _ in 0..20 {
            call()?;
        }
        dev.synchronize()?;
        let host = idle_host_us(&dev, 200, &call)?;
        dev.synchronize()?;
        let (mut burst, mut busy) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            dev.synchronize()?;
            let t = Instant::now();
            let outs: Vec<Tensor> = (0..32).map(|_| call()).collect::<Result<_>>()?;
            dev.synchronize()?;
            burst.push(t.elapsed().as_secs_f64() * 1e6 / 32.0);
            drop(outs);
            let t = Instant::now();
            let work = square.matmul(&square)?.matmul(&square)?;
            let outs: Vec<Tensor> = (0..32).map(|_| call()).collect::<Result<_>>()?;
            dev.synchronize()?;
            busy.push(t.elapsed().as_secs_f64() * 1e6 / 32.0);
            drop((work, outs));
        }
        println!(
            "INDEX_READ {mode} {name}: host {:.1} us, burst {:.1} us/call, busy {:.1} us/call",
            median(host),
            median(burst),
            median(busy)
        );
    }
    let one = Tensor::new(&[7u32], &dev)?;
    let (mut sync, mut read) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        dev.synchronize()?;
        let t = Instant::now();
        dev.synchronize()?;
        sync.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let _ = one.to_vec1::<u32>()?;
        read.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!("FLOORS: idle synchronize {:.1} us, 4-byte read through candle {:.1} us", median(sync), median(read));
    Ok(())
}

/// `--varlen` without the `cuda` feature: nothing to time.
#[cfg(not(feature = "cuda"))]
fn varlen_prefill(_: &Device, _: bool) -> Result<()> {
    candle_core::bail!("lab_index_read --varlen times CUDA events: build it with --features cuda")
}

/// `--varlen`: the varlen bench's prefill batch with host, GPU and host-after-a-drain indices.
#[cfg(feature = "cuda")]
fn varlen_prefill(dev: &Device, with_stream: bool) -> Result<()> {
    let (h, hkv, d) = (32usize, 8usize, 128usize);
    let lens = varlen::cuda_varlen_lengths();
    let (total, max) = (lens.iter().sum::<usize>(), *lens.iter().max().unwrap_or(&1));
    let cu: Vec<u32> = std::iter::once(0u32)
        .chain(lens.iter().scan(0u32, |a, &l| {
            *a += l as u32;
            Some(*a)
        }))
        .collect();
    let randn = |shape: &[usize]| Tensor::randn(0f32, 1.0, shape, dev)?.to_dtype(DType::BF16);
    let (q, k, v) = (randn(&[total, h, d])?, randn(&[total, hkv, d])?, randn(&[total, hkv, d])?);
    let params = AttnParams::new(1.0 / (d as f32).sqrt());
    let cuda = dev.as_cuda_device()?;
    let mode = format!(
        "{}{}",
        std::env::var("FUSED_ATTN_INDEX_READ").unwrap_or_else(|_| "batched".into()),
        if with_stream { " with-stream" } else { " default-device" }
    );
    for (name, idx_dev, sync) in
        [("hostidx", Device::Cpu, false), ("devidx", dev.clone(), false), ("hostidx+sync", Device::Cpu, true)]
    {
        let cu_t = Tensor::new(cu.as_slice(), &idx_dev)?;
        let vl = Varlen::new(&cu_t, &cu_t, max, max);
        let call = || {
            if sync {
                dev.synchronize()?;
            }
            attention_varlen(&q, &k, &v, &vl, &params)
        };
        for _ in 0..3 {
            call()?;
        }
        dev.synchronize()?;
        let events = do_bench::cuda_rep_ms(cuda, 10, &call)?;
        let host = idle_host_us(dev, 10, &call)?;
        println!(
            "VARLEN {mode} {name}: events {:.3} ms (bench method), host {:.1} us per call on an idle GPU",
            median(events),
            median(host)
        );
    }
    Ok(())
}
