//! What the first call of a kernel family costs in a fresh process, against a warm call: on
//! a GPU the crate ships machine code for, it should be a module load (well under 0.5 s),
//! not a JIT compile of PTX (seconds). Run it with the driver's compute cache disabled, so
//! that an earlier run's JIT results cannot hide a compile:
//! ```text
//! CUDA_CACHE_DISABLE=1 cargo run --release --features cuda --example coldstart -- prefill
//! ```
//! Argument: `prefill | decode | backward` (one family per process: the first call of each
//! loads its kernel file; scripts/device-run.sh's `coldstart` stage runs all three). bf16,
//! head dim 128, causal: prefill (1, 2048, 16) self-attention; decode 8 sequences of one
//! query row, 32 q heads on 8 kv heads, 8192 cached keys; backward (1, 1024, 16) after an
//! untimed forward. Everything before the first call (context, cuBLAS, inputs, the casts
//! that make them) is untimed; each call is timed to a device synchronize. Prints
//! `first`, the median `warm` of 5 calls, and `COLDSTART <family> <first - warm>` for the
//! script.

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention, attention_backward, attention_with_lse, AttnParams};

fn randn(shape: (usize, usize, usize, usize), dev: &Device) -> Result<Tensor> {
    Tensor::randn(0f32, 1., shape, dev)?.to_dtype(DType::BF16)
}

/// Seconds of one call of `f`, up to a synchronize of `dev`.
fn timed(dev: &Device, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let t0 = Instant::now();
    f()?;
    dev.synchronize()?;
    Ok(t0.elapsed().as_secs_f64())
}

fn main() -> Result<()> {
    let family = std::env::args().nth(1).unwrap_or_else(|| "prefill".to_string());
    let t0 = Instant::now();
    let dev = Device::new_cuda(0)?;
    let d = 128;
    let params = AttnParams::new(1.0 / (d as f32).sqrt()).causal(true);
    let mut call: Box<dyn FnMut() -> Result<()>> = match family.as_str() {
        "prefill" => {
            let (q, k, v) =
                (randn((1, 2048, 16, d), &dev)?, randn((1, 2048, 16, d), &dev)?, randn((1, 2048, 16, d), &dev)?);
            Box::new(move || attention(&q, &k, &v, &params).map(drop))
        }
        "decode" => {
            let q = randn((8, 1, 32, d), &dev)?;
            let (k, v) = (randn((8, 8192, 8, d), &dev)?, randn((8, 8192, 8, d), &dev)?);
            Box::new(move || attention(&q, &k, &v, &params).map(drop))
        }
        "backward" => {
            let (q, k, v) =
                (randn((1, 1024, 16, d), &dev)?, randn((1, 1024, 16, d), &dev)?, randn((1, 1024, 16, d), &dev)?);
            // The forward that a backward needs loads the prefill file: untimed.
            let (out, lse) = attention_with_lse(&q, &k, &v, &params)?;
            let grad_out = randn((1, 1024, 16, d), &dev)?;
            Box::new(move || attention_backward(&q, &k, &v, &out, &grad_out, &lse, &params).map(drop))
        }
        other => candle_core::bail!("coldstart: unknown family {other}; expected prefill, decode or backward"),
    };
    dev.synchronize()?;
    let setup = t0.elapsed().as_secs_f64();

    let first = timed(&dev, &mut call)?;
    let mut warm: Vec<f64> = (0..5).map(|_| timed(&dev, &mut call)).collect::<Result<_>>()?;
    warm.sort_by(f64::total_cmp);
    let warm = warm[warm.len() / 2];
    let cache = std::env::var("CUDA_CACHE_DISABLE").unwrap_or_else(|_| "unset".to_string());
    println!(
        "coldstart {family}: setup {setup:.3} s (untimed), first call {first:.4} s, warm call {warm:.4} s \
         (median of 5), first - warm {:.4} s; CUDA_CACHE_DISABLE={cache}",
        first - warm
    );
    println!("COLDSTART {family} {:.4}", first - warm);
    Ok(())
}
