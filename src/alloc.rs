//! Allocations that fail as a candle `Error` instead of aborting or being killed: host
//! vectors checked against the machine's memory before they are touched, and zero-element
//! tensors on devices where candle 0.11 cannot allocate 0 bytes (CUDA: a 0-byte
//! `cuMemAllocAsync` is an invalid value).

use candle_core::{bail, DType, Device, Result, Shape, Tensor};
use std::sync::OnceLock;

/// A vector of `n` copies of `fill`, or an error naming `what` when the allocation fails
/// (where `vec!` would abort the process): the outputs and LSEs the CPU path allocates.
pub(crate) fn try_vec<T: Clone>(n: usize, fill: T, what: &str) -> Result<Vec<T>> {
    let mut v = try_capacity(n, what)?;
    v.resize(n, fill);
    Ok(v)
}

/// An empty vector with room for `n` elements, or an error naming `what` when the allocation
/// fails or needs more bytes than the machine has (RAM and swap). The second check matters
/// under memory overcommit: the reservation then succeeds whatever its size, and filling it
/// gets the process killed (a head_dim-0 problem whose LSE is 2^42 rows ran 63 s and was
/// killed on the GPU host in session 41).
pub(crate) fn try_capacity<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    let bytes = n.checked_mul(size).map(|b| b as u64);
    if let (Some(mem), Some(b)) = (machine_memory(), bytes) {
        if b > mem {
            bail!("fused-attn: cannot allocate {what}: {n} elements of {size} bytes ({b} bytes) exceed this machine's {mem} bytes of memory")
        }
    }
    let mut v = Vec::new();
    if bytes.is_none() || v.try_reserve_exact(n).is_err() {
        bail!("fused-attn: cannot allocate {what}: {n} elements of {size} bytes")
    }
    Ok(v)
}

/// RAM plus swap in bytes (Linux: /proc/meminfo), read once; `None` where unknown.
fn machine_memory() -> Option<u64> {
    static MEM: OnceLock<Option<u64>> = OnceLock::new();
    *MEM.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(key))?;
            line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
        };
        Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)).saturating_mul(1024))
    })
}

/// `value` in every element of a tensor of `shape`. A zero-element shape is a view of a
/// one-element buffer on every device (candle 0.11 cannot allocate 0 bytes on CUDA).
pub(crate) fn full<S: Into<Shape>>(value: f64, shape: S, dtype: DType, dev: &Device) -> Result<Tensor> {
    let shape = shape.into();
    if shape.elem_count() == 0 {
        return Tensor::zeros(1, dtype, dev)?.narrow(0, 0, 0)?.reshape(shape);
    }
    if value == 0.0 {
        return Tensor::zeros(shape, dtype, dev);
    }
    Tensor::full(value, shape, dev)?.to_dtype(dtype)
}

/// Zeros of `shape`, as [`full`].
pub(crate) fn zeros<S: Into<Shape>>(shape: S, dtype: DType, dev: &Device) -> Result<Tensor> {
    full(0.0, shape, dtype, dev)
}

/// Zeros of `t`'s shape, dtype and device, as [`full`].
pub(crate) fn zeros_like(t: &Tensor) -> Result<Tensor> {
    zeros(t.shape(), t.dtype(), t.device())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_tensors_are_views_and_sizes_are_checked() -> Result<()> {
        let t = zeros((3, 0, 5), DType::BF16, &Device::Cpu)?;
        assert_eq!((t.dims(), t.dtype(), t.is_contiguous()), (&[3, 0, 5][..], DType::BF16, true));
        let t = full(f64::NEG_INFINITY, (2, 3), DType::F32, &Device::Cpu)?;
        assert_eq!(t.to_vec2::<f32>()?, vec![vec![f32::NEG_INFINITY; 3]; 2]);
        assert_eq!(try_vec(3, 1u8, "x")?, vec![1, 1, 1]);
        let e = try_capacity::<f32>(1 << 60, "the LSE").unwrap_err().to_string();
        assert!(e.contains("the LSE") && e.contains("1152921504606846976"), "{e}");
        let e = try_capacity::<u64>(usize::MAX, "the output").unwrap_err().to_string();
        assert!(e.contains("the output"), "{e}");
        Ok(())
    }
}
