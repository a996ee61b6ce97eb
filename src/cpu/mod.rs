//! CPU forward: FlashAttention-2 on the CPU.
//!
//! **What it computes.** `out = softmax(s) v` per (batch, q head, query row), with
//! `s = scale·<q,k>`, then softcap, ALiBi and the bottom-right masks of [`Problem`],
//! without an `Sq×Sk` buffer: keys are visited in tiles and the softmax is kept online
//! (running row max `m`, running sum `l`, f32 accumulator), as FlashAttention-2 does.
//!
//! **Work split.** One work item is (batch, kv head, query block, key split). Its rows are
//! the query positions of the block × the q heads that share the kv head (GQA/MQA), so one
//! K/V tile (converted to f32 once for f16/bf16; read in place for f32) serves every head
//! of the group. Items run on rayon. Decode-like calls (`sq ≤ 16`) with too few items for
//! the threads also split the keys (split-KV): each split returns its partial `(m, l, acc)`
//! and a merge rescales and adds them.
//!
//! **Per key tile.** `S = Q Kᵀ`, the online softmax, then `acc = corr·acc + P V`. When
//! several query blocks reuse each key (prefill), K is transposed and V (f16/bf16:
//! converted; f32: copied) once per call into padded-stride, line-aligned f32 blocks of
//! one key tile each ([`SharedKv`]), O(Sk·D), in buffers kept from one call to the next so
//! that their pages are not faulted in again. On CPUs
//! with AVX2 + FMA, and `d % 8 == 0`, the two products of such items run in the
//! hand-written 6×16 register-blocked kernels of [`avx2`], which also hold the softmax's
//! row max and `exp` passes: gemm's per-call dispatch and planning cost about as much as
//! its micro-kernel saved on 48 × 128 × 64 products. Elsewhere the products go through the
//! `gemm` crate (runtime dispatched SIMD micro-kernels) with every operand laid out as
//! gemm's column-major micro-kernel reads it, so gemm packs nothing: Q and P rows as they
//! are, V rows, and K transposed; with one query block (decode) the tiles are read in
//! place (f32) or converted per tile, and items of ≤ 8 rows use direct dot products /
//! axpys with software prefetch instead of gemm. The other softmax loops (softcap, ALiBi,
//! and max / `exp` off the AVX2 path) are plain loops over f32 slices compiled once per
//! instruction set (AVX-512, AVX2+FMA, portable) and picked at run time. Scores are kept
//! in base 2 (`log2(e)` is folded into Q's scale), so the exponentials are `2^x`, a
//! branch-free Cephes polynomial in FMAs so that those loops vectorize. Key tiles that no
//! row of the item can see are skipped; mask arithmetic runs only on tiles that some row
//! sees partially.
//!
//! **Tiles.** 48 rows per item × 256 keys per tile (a d = 64 Kᵀ tile is 68 KiB, the S tile
//! 51 KiB: both in L2; the kernels' column slices, 4 and 8 KiB, in L1). With gemm, 48
//! rows was its limit for streaming an unpacked operand (packing cost 13% at 96 rows) and
//! 64–256 keys were within noise of each other. With the AVX2 kernels, 48, 96 and 192 rows
//! gave 61.5, 60.5 and 60.5 ms single-thread at (1,4,4,2048,2048,64) (CPU time, min of 5
//! alternating runs): no reason to change. 256 keys rather than 128 halve the per-row,
//! per-tile work of the online softmax and the accumulator's reload and rescale: at
//! (1,16,16,2048,2048,64) f32 single-thread the min of 5 calls went from 247–286 to
//! 226–257 ms (6 interleaved rounds), the softmax's share of the samples from 14.1–14.4%
//! to 11.7–12.3%, and on 2 threads the medians from 156–177 to 147–162 ms; the causal
//! shape (more masked keys computed on the diagonal) did not get slower (medians 83–101
//! against 82–92 ms); 512 keys were level with 256. Measured on the 2-core dev
//! machine (AMD EPYC Zen 3, 2.45 GHz base, about 3.1 GHz under load; AVX2 + FMA, no
//! AVX-512). There, single-thread at (1,16,16,2048,2048,64) f32 (perf samples), the AVX2
//! kernels take about 80% of the time at about 93% of the FMA peak (a register-only FMA
//! loop runs at 101 GFLOP/s per core, 2 × 101 on both), the softmax about 12–13%,
//! preparing K/V about 2% and the rest (Q and output copies, rayon) about 5%.
//!
//! **History** (same shape, same machine, noisy). Per-row scalar loop (interim): not
//! timed. Tiles through gemm with row-major operands: 420 ms on 2 threads, 30% of the
//! time in gemm's packing. Column-major operands + shared Kᵀ (no packing) at 48 rows:
//! 515 ms single-thread, the unpacked micro-kernel thrashing L1 sets on 4 KiB-multiple
//! strides; padded strides: 302 ms single-thread. Criterion medians are in
//! `benches/attention.rs`'s output (249 ms, 69 GFLOP/s, vs naive 1.79 s when written;
//! 199 ms, 86 GFLOP/s, at the last gemm version). With the AVX2 kernels: criterion
//! medians from 145 to 198 ms over a dozen runs in one hour (f32 154–198 ms, 87–112
//! GFLOP/s; bf16 145–181 ms), moving together with the decode row (4.3–7.3 ms), so with
//! the host rather than the guest's load (0–1.3); single-thread, the call costs 252 ms of
//! CPU (4 × 63 ms at (1,4,4,2048,2048,64)), 126 ms on two uncontended cores. Then, each
//! step measured single-thread at (1,16,16,2048,2048,64) f32 against the previous one in
//! interleaved runs: K/V buffers kept across calls (about 3k page faults per call fewer:
//! their preparation 25–32 → 9–13 ms); Kᵀ stored tile by tile (min of 5 calls 254–263 →
//! 238–247 ms); softmax in base 2 (its share of the samples 15.5–16.5% → 11–13%); K/V
//! prepared tile by tile for all kv heads, 8 keys at once (2.4–3.1 ms on 2 threads, from
//! 4.8–9). Criterion, interleaved with the version before these steps in the same
//! window: 160–170 ms against 190–195 ms. Tried without a measurable gain: Estrin's form
//! for the `2^x` polynomial (shorter dependency chain), 96 or 192 rows per item (a quarter
//! of the K/V traffic), 24 rows (double: about 3% slower), software prefetch of the next
//! S row or of the next Kᵀ / V column slices (slower), per-row scalar work moved out of
//! the softmax loop.

use candle_core::{backend::BackendStorage, bail, CpuStorage, Layout, Result};
use half::{bf16, f16};

use crate::problem::{Problem, Strides};

#[cfg(target_arch = "x86_64")]
mod avx2;
mod forward;
mod pack;
mod softmax;

use forward::{AttendFn, Ctx, Item, Scratch};
use pack::Element;

pub(crate) fn forward(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    alibi: Option<&[f32]>,
) -> Result<CpuStorage> {
    let (qs, ks, vs) = (Strides::from_layout(ql)?, Strides::from_layout(kl)?, Strides::from_layout(vl)?);
    if let Some(a) = alibi {
        if a.len() != p.batch * p.heads {
            bail!("fused-attn cpu: expected {} alibi slopes (batch × heads), got {}", p.batch * p.heads, a.len())
        }
    }
    match (q, k, v) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => {
            forward::run::<f32>(p, (q, qs), (k, ks), (v, vs), alibi, select_kernel())
        }
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v)) => {
            forward::run::<f16>(p, (q, qs), (k, ks), (v, vs), alibi, select_kernel())
        }
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v)) => {
            forward::run::<bf16>(p, (q, qs), (k, ks), (v, vs), alibi, select_kernel())
        }
        _ => bail!(
            "fused-attn cpu: q, k and v must share one of f32, f16, bf16; got {:?}, {:?}, {:?}",
            q.dtype(),
            k.dtype(),
            v.dtype()
        ),
    }
}

/// The widest instruction set this CPU has, for the softmax loops (the `gemm` crate
/// dispatches its own kernels).
fn select_kernel<T: Element>() -> AttendFn<T> {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            return attend_avx512::<T>;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return attend_avx2::<T>;
        }
    }
    attend_portable::<T>
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; the features were detected.
    unsafe { forward::attend::<T, false>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; the features were detected.
    unsafe { forward::attend::<T, true>(ctx, it, sc) }
}

unsafe fn attend_portable<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's.
    unsafe { forward::attend::<T, false>(ctx, it, sc) }
}
