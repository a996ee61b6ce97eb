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
//!
//! Models whose naive branch cannot run in f64 (llama and mistral: candle-nn's fused
//! `rms_norm` has no f64 CPU kernel, "unsupported dtype for rmsnorm F64") are checked against
//! an f32 reference instead: the same model with `use_flash_attn: false` in f32 on the CPU.
//! In f32 on the CPU the naive run IS that reference (error 0), so the yardstick of what the
//! dtype's rounding does is measured separately: the reference model with every weight moved
//! to a neighbouring f32 (one ulp up or down, `neighbour_weights`). The f32 weights are
//! themselves a rounding of the exact ones, and either neighbour is as faithful a rounding, so
//! the neighbour's distance from the reference is what one f32 rounding of the inputs of every
//! product costs at the logits; flash's reordered softmax sums are rounding of the same order.
//! The yardstick is the larger of that and the naive run's own distance (which dominates in
//! bf16/f16 or on the GPU); the criterion is unchanged: flash <= 2 x yardstick + floor.
#![allow(dead_code)]

use std::collections::HashMap;

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

/// Every weight (f32, CPU) moved to a neighbouring f32: one ulp up or down, the direction from
/// a fixed pseudo-random sequence (SplitMix64 over `seed`, tensors in name order). Zeros and
/// non-finite values are kept.
pub fn neighbour_weights(weights: &HashMap<String, Tensor>, seed: u64) -> Result<HashMap<String, Tensor>> {
    let mut state = seed;
    let mut next_bit = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) & 1 == 1
    };
    let mut names: Vec<&String> = weights.keys().collect();
    names.sort();
    let mut out = HashMap::new();
    for name in names {
        let w = &weights[name];
        if w.dtype() != DType::F32 || !w.device().is_cpu() {
            bail!("neighbour_weights: {name} is {:?} on {:?}, expected f32 on the CPU", w.dtype(), w.device())
        }
        let moved: Vec<f32> = w
            .flatten_all()?
            .to_vec1::<f32>()?
            .into_iter()
            .map(|x| {
                if x == 0.0 || !x.is_finite() {
                    return x;
                }
                // For a finite nonzero x, bits +- 1 is the next f32 away from / towards zero.
                let bits = x.to_bits();
                f32::from_bits(if next_bit() { bits + 1 } else { bits - 1 })
            })
            .collect();
        out.insert(name.clone(), Tensor::from_vec(moved, w.shape(), &Device::Cpu)?);
    }
    Ok(out)
}

/// Errors of the two paths against the oracle at one step, and the bound `flash` must meet.
/// `neighbour` is the yardstick run of an f32 reference (0 with an f64 oracle).
#[derive(Debug, Clone, Copy)]
pub struct StepError {
    pub flash: f32,
    pub naive: f32,
    pub neighbour: f32,
    pub bound: f32,
}

impl StepError {
    /// Against an f64 oracle: the yardstick is the naive run's error.
    pub fn new(flash: &Tensor, naive: &Tensor, oracle: &Tensor, dtype: DType) -> Result<Self> {
        let (flash, naive) = (max_diff(flash, oracle)?, max_diff(naive, oracle)?);
        let floor = 4.0 * unit_roundoff(dtype) * max_abs(oracle)?;
        Ok(Self { flash, naive, neighbour: 0.0, bound: 2.0 * naive + floor })
    }

    /// Against an f32 reference (module docs): the yardstick is the larger of the naive run's
    /// error and the neighbour-weights run's; the floor is that of the check's dtype, at least
    /// f32's (the reference's own rounding).
    pub fn against_f32(
        flash: &Tensor,
        naive: &Tensor,
        neighbour: &Tensor,
        reference: &Tensor,
        dtype: DType,
    ) -> Result<Self> {
        let (flash, naive, neighbour) =
            (max_diff(flash, reference)?, max_diff(naive, reference)?, max_diff(neighbour, reference)?);
        let u = unit_roundoff(dtype).max(unit_roundoff(DType::F32));
        let floor = 4.0 * u * max_abs(reference)?;
        Ok(Self { flash, naive, neighbour, bound: 2.0 * naive.max(neighbour) + floor })
    }

    pub fn ok(&self) -> bool {
        self.flash <= self.bound
    }
}
