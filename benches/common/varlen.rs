//! The varlen batches that benches/attention.rs times, in one place: the CPU one
//! (`cpu_varlen_*`, also examples/bench_cpu.rs `--varlen`) and the CUDA one (`cuda_varlen_bf16`,
//! also examples/lab_index_read.rs `--varlen`).

// Each includer uses some of the batches.
#![allow(dead_code)]

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

/// The packed batch of the CUDA varlen bench: 64 sequence lengths in 100..=4000 from a fixed
/// seed (a 64-bit LCG, so that scripts/bench_torch_varlen.py draws the same ones).
pub fn cuda_varlen_lengths() -> Vec<usize> {
    let mut x: u64 = 20261123;
    (0..64)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            100 + ((x >> 33) % 3901) as usize
        })
        .collect()
}
