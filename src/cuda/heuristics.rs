//! Launch decisions: which kernel instance runs a problem.

use candle_core::{bail, Result};

use super::instances::{Arch, Instance, KernelKey, INSTANCES};

/// The instance that runs `key` on `arch`: the smallest of its family, dtype and variant whose
/// head dim holds the problem's (smaller head dims are zero-padded inside the kernel).
pub(super) fn instance(key: KernelKey, arch: Arch) -> Result<&'static Instance> {
    let candidates = || {
        INSTANCES.iter().filter(move |i| {
            i.family == key.family && i.arch == arch && i.dtype == key.dtype && i.variant.serves(key.mods)
        })
    };
    match candidates().filter(|i| i.head_dim as usize >= key.head_dim).min_by_key(|i| i.head_dim) {
        Some(inst) => Ok(inst),
        None => bail!(
            "fused-attn cuda: head_dim {} has no {:?} kernel instance for {:?} (instances: {:?})",
            key.head_dim,
            key.family,
            key.dtype,
            candidates().map(|i| i.head_dim).collect::<Vec<_>>()
        ),
    }
}
