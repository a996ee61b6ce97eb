//! Numeric limits the CPU path, the CUDA host code and (through build.rs, which includes this
//! file and asserts its numbers into the generated kernel header) the kernels share.

/// Above this `softmax_scale · log2 e` (about softmax_scale 11) attention scales each score
/// before its row max instead of folding the scale into the exponent's multiply-add: the CUDA
/// prefill takes its `_mods` instances, the CPU's bf16 paths their unfused pass.
///
/// The fold computes `2^(x·c - round(m·c))` with the product `x·c` exact inside the FMA, so the
/// row's largest probability is `2^δ`, where `|δ|` reaches half an ulp of the scaled max. That
/// is harmless while scaled scores stay small, but from about 2^28 it overflows an f16 P tile
/// (2^31: f32) or underflows to a row of zeros: NaN or zero outputs at scales of 1e7 and more
/// on both devices (session 41, `lab/results/s41-call6`). Below this scale the fold needs
/// `|q·k| ≥ 2^24` to go wrong; every model's scale is far below it. `kFattnPrescaleAboveLog2`
/// in kernels/common/params.cuh is the kernels' copy.
pub const PRESCALE_ABOVE_LOG2: f32 = 16.0;
