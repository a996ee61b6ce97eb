//! Shared by the checks: where they run, and how close "flash" must be to "naive".
//!
//! Device and dtype: the CPU in f32 by default; `TRANSFORMERS_CHECK_DEVICE=cuda` runs on GPU 0
//! (the device run: docs/device-loop.md, stage `transformers`) in bf16, and
//! `TRANSFORMERS_CHECK_DTYPE=f32|f16|bf16` overrides the dtype.
//!
//! The tolerance rule is the crate's (tests/common in the repository root): the model with
//! `use_flash_attn: true` may be at most twice as far from an f64 oracle as the same model
//! with `use_flash_attn: false` in the same dtype, plus a floor of a few units of the dtype's
//! rounding at the logits' scale. The oracle is the same model and weights in f64 on the CPU,
//! with `use_flash_attn: false`.
#![allow(dead_code)]

use candle_core::{bail, DType, Device, Result, Tensor};

pub fn device() -> Result<Device> {
    match std::env::var("TRANSFORMERS_CHECK_DEVICE").as_deref() {
        Err(_) | Ok("") | Ok("cpu") => Ok(Device::Cpu),
        Ok("cuda") => Device::new_cuda(0),
        Ok(other) => bail!("TRANSFORMERS_CHECK_DEVICE={other:?}: expected cpu or cuda"),
    }
}

pub fn dtype(device: &Device) -> Result<DType> {
    match std::env::var("TRANSFORMERS_CHECK_DTYPE").as_deref() {
        Err(_) | Ok("") => Ok(if device.is_cpu() { DType::F32 } else { DType::BF16 }),
        Ok("f32") => Ok(DType::F32),
        Ok("f16") => Ok(DType::F16),
        Ok("bf16") => Ok(DType::BF16),
        Ok(other) => bail!("TRANSFORMERS_CHECK_DTYPE={other:?}: expected f32, f16 or bf16"),
    }
}

/// The dtype's unit roundoff (half an ulp at 1).
pub fn unit_roundoff(dtype: DType) -> f32 {
    match dtype {
        DType::F16 => 2f32.powi(-11),
        DType::BF16 => 2f32.powi(-8),
        _ => f32::EPSILON / 2.0,
    }
}

pub fn max_abs(t: &Tensor) -> Result<f32> {
    t.to_dtype(DType::F32)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
}

/// max |a - b|, computed in f64 on the CPU.
pub fn max_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    let a = a.to_device(&Device::Cpu)?.to_dtype(DType::F64)?;
    let b = b.to_device(&Device::Cpu)?.to_dtype(DType::F64)?;
    Ok((a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f64>()? as f32)
}

/// Errors of the two paths against the oracle at one step, and the bound `flash` must meet.
#[derive(Debug, Clone, Copy)]
pub struct StepError {
    pub flash: f32,
    pub naive: f32,
    pub bound: f32,
}

impl StepError {
    pub fn new(flash: &Tensor, naive: &Tensor, oracle: &Tensor, dtype: DType) -> Result<Self> {
        let (flash, naive) = (max_diff(flash, oracle)?, max_diff(naive, oracle)?);
        let floor = 4.0 * unit_roundoff(dtype) * max_abs(oracle)?;
        Ok(Self { flash, naive, bound: 2.0 * naive + floor })
    }

    pub fn ok(&self) -> bool {
        self.flash <= self.bound
    }
}
