//! Peak resident memory of one attention call on the CPU, fused or naive.
//!
//! Run each path in its own process so that the peaks do not mix:
//! ```text
//! cargo run --release --example peak_rss -- fused 16384 16384
//! cargo run --release --example peak_rss -- naive 16384 16384
//! ```
//! Arguments: `fused|naive [seq_q] [seq_k] [heads] [head_dim]` (defaults 16384, 16384, 1,
//! 64), f32, non-causal. The peak is the kernel's `VmHWM` (high-water mark of the
//! resident set) read from `/proc/self/status`: reset once the inputs exist, then read
//! after the call; the difference is what the call itself needed. Inputs are deterministic
//! (sines), so the two runs print the same checksum.

use candle_core::{Device, Result, Tensor};
use candle_fused_attn::{attention, attention_ref, AttnParams};

/// `VmHWM` in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status (Linux only)");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmHWM value")
}

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).map_or(default, |a| a.parse().unwrap_or_else(|_| panic!("argument {i} must be a number, got {a}")))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("fused");
    let fused = match mode {
        "fused" => true,
        "naive" => false,
        other => panic!("first argument must be fused or naive, got {other}"),
    };
    let (sq, sk, h, d) = (arg(&args, 2, 16384), arg(&args, 3, 16384), arg(&args, 4, 1), arg(&args, 5, 64));

    let dev = Device::Cpu;
    // Deterministic inputs, so that the two processes' checksums must agree.
    let wave = |n: usize, shape: (usize, usize, usize, usize), freq: f64, phase: f64| -> Result<Tensor> {
        Tensor::arange(0u32, n as u32, &dev)?
            .to_dtype(candle_core::DType::F32)?
            .affine(freq, phase)?
            .sin()?
            .reshape(shape)
    };
    let q = wave(sq * h * d, (1, sq, h, d), 0.37, 0.0)?;
    let k = wave(sk * h * d, (1, sk, h, d), 0.91, 1.0)?;
    let v = wave(sk * h * d, (1, sk, h, d), 0.13, 2.0)?;
    let params = AttnParams::new(1.0 / (d as f32).sqrt());
    // Reset the high-water mark to the current RSS (Linux ≥ 4.0), so that the transient
    // buffers that built the inputs do not hide the call's own peak.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM through /proc/self/clear_refs");
    let before = peak_rss_kib();
    let start = std::time::Instant::now();
    let out = if fused { attention(&q, &k, &v, &params)? } else { attention_ref(&q, &k, &v, &params)? };
    let elapsed = start.elapsed();
    let after = peak_rss_kib();
    let checksum = out.sum_all()?.to_scalar::<f32>()?;
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{mode}: (B,H,Sq,Sk,D) = (1,{h},{sq},{sk},{d}) f32: peak RSS {:.1} MiB after inputs, {:.1} MiB after the call \
         (+{:.1} MiB for the call; one Sq×Sk f32 score matrix per head is {:.1} MiB), {:.2} s, checksum {checksum:.3}",
        mib(before),
        mib(after),
        mib(after - before),
        (sq * sk * 4) as f64 / (1 << 20) as f64,
        elapsed.as_secs_f64()
    );
    Ok(())
}
