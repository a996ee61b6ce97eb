//! Lab (session 41): where each CUDA kernel stops being right as the softmax scale grows.
//! The CUDA panic hunt found NaN outputs at scale 1e30 on every CUDA kernel family while the
//! CPU path stays right (a one-hot softmax there). Per kernel generation, dtype, shape and
//! scale: NaN outputs, rows of zeros (a row the kernel took for one with no visible key), the
//! largest difference from the CPU's answer on the same inputs, and NaN gradients.
//!   cargo run --release --features cuda --example lab_scale_range
use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{
    attention, attention_backward, attention_with_lse, with_cuda_kernels, AttnParams, CudaKernels,
};

fn stats(got: &Tensor, want: &Tensor, d: usize) -> Result<(usize, usize, f64)> {
    let g = got.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let w = want.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let nan = g.iter().filter(|x| !x.is_finite()).count();
    let zero = g.chunks(d).filter(|c| c.iter().all(|x| *x == 0.0)).count();
    let diff = g.iter().zip(&w).filter(|(a, _)| a.is_finite()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    Ok((nan, zero, diff))
}

fn main() -> Result<()> {
    let gpu = Device::new_cuda(0)?;
    let cpu = Device::Cpu;
    // (label, b, sq, h, hkv, sk, d)
    let shapes = [
        ("prefill", 1usize, 256usize, 4usize, 2usize, 256usize, 64usize),
        ("prefill d128", 1, 200, 4, 4, 300, 128),
        ("decode", 2, 1, 8, 2, 1024, 128),
        ("decode sq3 d512", 1, 3, 2, 1, 40, 512),
        ("prefill d512", 1, 100, 2, 1, 100, 512),
    ];
    println!("kernels | dtype | shape | scale | fwd non-finite | zero rows | max |gpu - cpu| | lse non-finite | dq non-finite");
    for &(label, b, sq, h, hkv, sk, d) in &shapes {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let q = Tensor::randn(0f32, 1., (b, sq, h, d), &cpu)?.to_dtype(dtype)?;
            let k = Tensor::randn(0f32, 1., (b, sk, hkv, d), &cpu)?.to_dtype(dtype)?;
            let v = Tensor::randn(0f32, 1., (b, sk, hkv, d), &cpu)?.to_dtype(dtype)?;
            let (qg, kg, vg) = (q.to_device(&gpu)?, k.to_device(&gpu)?, v.to_device(&gpu)?);
            for scale in [0.1f32, 1e3, 1e6, 1e7, 1e8, 1e9, 1e12, 1e20, 1e30] {
                let p = AttnParams::new(scale).causal(sq > 1);
                let want = attention(&q, &k, &v, &p)?;
                for kernels in [CudaKernels::Auto, CudaKernels::Sm80] {
                    let row = with_cuda_kernels(kernels, || -> Result<String> {
                        let (o, lse) = attention_with_lse(&qg, &kg, &vg, &p)?;
                        let (nan, zero, diff) = stats(&o, &want, d)?;
                        let lse_bad = lse.flatten_all()?.to_vec1::<f32>()?.iter().filter(|x| !x.is_finite()).count();
                        let dq_bad = if sq > 1 && d <= 256 {
                            let g = o.ones_like()?;
                            let (dq, _, _) = attention_backward(&qg, &kg, &vg, &o, &g, &lse, &p)?;
                            let n = dq.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                            n.iter().filter(|x| !x.is_finite()).count().to_string()
                        } else {
                            "-".into()
                        };
                        Ok(format!("{nan} | {zero} | {diff:.3e} | {lse_bad} | {dq_bad}"))
                    })
                    .unwrap_or_else(|e| format!("error: {e}"));
                    println!("{kernels:?} | {dtype:?} | {label} | {scale:e} | {row}");
                }
            }
        }
    }
    Ok(())
}
