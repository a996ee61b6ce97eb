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
//! ```text
//! cargo run --release --features cuda --example lab_index_read [-- --with-stream]
//! FUSED_ATTN_INDEX_READ=stream cargo run --release --features cuda --example lab_index_read [-- --with-stream]
//! ```

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention_varlen, AttnParams, Varlen};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let with_stream = std::env::args().any(|a| a == "--with-stream");
    let dev = if with_stream { Device::new_cuda_with_stream(0)? } else { Device::new_cuda(0)? };
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
        let mut host = Vec::new();
        for _ in 0..200 {
            dev.synchronize()?;
            let t = Instant::now();
            let out = call()?;
            host.push(t.elapsed().as_secs_f64() * 1e6);
            drop(out);
        }
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
