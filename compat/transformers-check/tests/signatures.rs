//! The compatibility crate has every public item of candle-flash-attn 0.11.1 with upstream's
//! signature, and the [patch] is in effect: this workspace's `candle_flash_attn` runs on the
//! CPU, which upstream's cannot (its op has no `cpu_fwd`).
//!
//! Each function is coerced to the function-pointer type written out from upstream's source
//! (candle-flash-attn 0.11.1, src/lib.rs); a changed argument type or order fails to compile.

use candle_core::{CustomOp3, DType, Device, Result, Tensor, D};

type T<'a> = &'a Tensor;

#[test]
// The point is to write each signature out whole, as upstream's source has it.
#[allow(clippy::type_complexity)]
fn every_upstream_function_has_its_signature() {
    let _: fn(T, T, T, f32, bool) -> Result<Tensor> = candle_flash_attn::flash_attn;
    let _: fn(T, T, T, f32, Option<usize>, Option<usize>) -> Result<Tensor> = candle_flash_attn::flash_attn_windowed;
    let _: fn(T, T, T, T, f32, bool) -> Result<Tensor> = candle_flash_attn::flash_attn_alibi;
    let _: fn(T, T, T, T, f32, Option<usize>, Option<usize>) -> Result<Tensor> =
        candle_flash_attn::flash_attn_alibi_windowed;
    let _: fn(T, T, T, Option<T>, f32, Option<usize>, Option<usize>, f32) -> Result<Tensor> =
        candle_flash_attn::flash_attn_alibi_windowed_softcap;
    let _: fn(T, T, T, T, T, usize, usize, f32, bool) -> Result<Tensor> = candle_flash_attn::flash_attn_varlen;
    let _: fn(T, T, T, T, T, usize, usize, f32, Option<usize>, Option<usize>) -> Result<Tensor> =
        candle_flash_attn::flash_attn_varlen_windowed;
    #[rustfmt::skip]
    let _: fn(T, T, T, T, T, T, Option<T>, usize, usize, f32, Option<usize>, Option<usize>, usize, Option<f32>) -> Result<Tensor> =
        candle_flash_attn::flash_attn_varlen_paged_windowed;
    let _: fn(T, T, T, T, T, T, usize, usize, f32, bool) -> Result<Tensor> = candle_flash_attn::flash_attn_varlen_alibi;
    let _: fn(T, T, T, T, T, T, usize, usize, f32, Option<usize>, Option<usize>) -> Result<Tensor> =
        candle_flash_attn::flash_attn_varlen_alibi_windowed;
    #[rustfmt::skip]
    let _: fn(T, T, T, Option<T>, T, T, usize, usize, f32, Option<usize>, Option<usize>, f32) -> Result<Tensor> =
        candle_flash_attn::flash_attn_varlen_alibi_windowed_softcap;
}

/// `FlashAttn` has upstream's five public fields (a struct literal names them all) and is a
/// `CustomOp3`.
#[test]
fn flash_attn_struct_is_upstreams() -> Result<()> {
    fn is_op3<O: CustomOp3>(_: &O) {}
    let op = candle_flash_attn::FlashAttn {
        softmax_scale: 0.25,
        alibi_slopes: None::<Tensor>,
        window_size_left: None::<usize>,
        window_size_right: Some(0usize),
        softcap: None::<f32>,
    };
    is_op3(&op);
    let q = Tensor::randn(0f32, 1., (1, 5, 2, 16), &Device::Cpu)?;
    let out = q.apply_op3(&q, &q, op)?;
    let expected = candle_flash_attn::flash_attn(&q, &q, &q, 0.25, true)?;
    assert_eq!((out - expected)?.abs()?.max_all()?.to_scalar::<f32>()?, 0.0);
    Ok(())
}

/// The patched crate computes attention on the CPU: causal softmax(q kᵀ · scale) v, checked
/// against the formula written with candle ops.
#[test]
fn patched_flash_attn_runs_on_the_cpu() -> Result<()> {
    let dev = Device::Cpu;
    let (s, h, d) = (9, 2, 32);
    let q = Tensor::randn(0f32, 1., (1, s, h, d), &dev)?;
    let k = Tensor::randn(0f32, 1., (1, s, h, d), &dev)?;
    let v = Tensor::randn(0f32, 1., (1, s, h, d), &dev)?;
    let scale = 1.0 / (d as f32).sqrt();
    let out = candle_flash_attn::flash_attn(&q, &k, &v, scale, true)?;

    let (qt, kt, vt) = (q.transpose(1, 2)?, k.transpose(1, 2)?, v.transpose(1, 2)?);
    let scores = (qt.to_dtype(DType::F64)?.matmul(&kt.to_dtype(DType::F64)?.t()?)? * scale as f64)?;
    let mask: Vec<f64> = (0..s).flat_map(|i| (0..s).map(move |j| if j > i { f64::NEG_INFINITY } else { 0. })).collect();
    let scores = scores.broadcast_add(&Tensor::from_vec(mask, (s, s), &dev)?)?;
    let p = candle_nn::ops::softmax(&scores, D::Minus1)?;
    let reference = p.matmul(&vt.to_dtype(DType::F64)?)?.transpose(1, 2)?;
    let err = (out.to_dtype(DType::F64)? - reference)?.abs()?.max_all()?.to_scalar::<f64>()?;
    assert!(err < 1e-5, "error {err}");
    Ok(())
}
