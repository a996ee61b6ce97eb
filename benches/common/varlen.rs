//! The CPU varlen batch that benches/attention.rs (`cpu_varlen_*`) and examples/bench_cpu.rs
//! (`--varlen`) time, in one place.

/// 8 sequence lengths in 64..=2000 from a fixed-seed 64-bit LCG, so that they never change
/// between runs or between the two binaries.
pub fn cpu_varlen_lengths() -> Vec<usize> {
    let mut x = 0x5eed_u64;
    (0..8)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            64 + ((x >> 33) as usize) % (2000 - 64 + 1)
        })
        .collect()
}
