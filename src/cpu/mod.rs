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

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;

use candle_core::{backend::BackendStorage, bail, CpuStorage, Layout, Result};
use half::{bf16, f16};

use crate::problem::{Problem, Strides};

#[cfg(target_arch = "x86_64")]
mod avx2;
mod forward;
mod pack;
mod softmax;

use forward::{AttendFn, Ctx, Item, Scratch};
pub use pack::release_cpu_buffers;
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
    pack::keep_limit_bytes()?;
    let path = path_for(p)?;
    match (q, k, v) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => {
            forward::run::<f32>(p, (q, qs), (k, ks), (v, vs), alibi, kernel(path)?)
        }
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v)) => {
            forward::run::<f16>(p, (q, qs), (k, ks), (v, vs), alibi, kernel(path)?)
        }
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v)) => {
            forward::run::<bf16>(p, (q, qs), (k, ks), (v, vs), alibi, kernel(path)?)
        }
        _ => bail!(
            "fused-attn cpu: q, k and v must share one of f32, f16, bf16; got {:?}, {:?}, {:?}",
            q.dtype(),
            k.dtype(),
            v.dtype()
        ),
    }
}

/// A CPU kernel path: the instruction set the attend loop is compiled for, and how it
/// computes the tile products. Forcing one is for tests and measurements (see the module
/// header); [`cpu_paths`] lists those this CPU can run.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuPath {
    /// The tile products through the `gemm` crate; the softmax, mask and decode loops
    /// compiled for AVX-512F.
    Avx512Gemm,
    /// The prefill tile products and the softmax's row max and `2^x` passes in the
    /// hand-written AVX2 + FMA kernels (`cpu/avx2.rs`, when `head_dim % 8 == 0`); the rest
    /// compiled for AVX2 + FMA.
    Avx2Kernels,
    /// The tile products through `gemm` (which picks its own SIMD kernels at run time); the
    /// rest compiled for the target's baseline.
    PortableGemm,
}

impl CpuPath {
    /// Every path, widest instruction set first.
    pub const ALL: [CpuPath; 3] = [CpuPath::Avx512Gemm, CpuPath::Avx2Kernels, CpuPath::PortableGemm];

    /// The name that `FUSED_ATTN_CPU_PATH` takes.
    pub fn name(self) -> &'static str {
        match self {
            CpuPath::Avx512Gemm => "avx512-gemm",
            CpuPath::Avx2Kernels => "avx2-kernels",
            CpuPath::PortableGemm => "portable-gemm",
        }
    }

    /// The CPU features the path's code is compiled for.
    pub fn required_features(self) -> &'static [&'static str] {
        match self {
            CpuPath::Avx512Gemm => &["avx512f", "avx2", "fma"],
            CpuPath::Avx2Kernels => &["avx2", "fma"],
            CpuPath::PortableGemm => &[],
        }
    }

    /// The required features this CPU lacks (all of them off x86-64): empty when the path
    /// can run here.
    pub fn missing_features(self) -> Vec<&'static str> {
        self.required_features().iter().copied().filter(|f| !has_feature(f)).collect()
    }

    /// An error naming the path and the features this CPU lacks, if it lacks any.
    fn check_supported(self) -> Result<()> {
        check_features(self, self.missing_features())
    }
}

fn check_features(path: CpuPath, missing: Vec<&str>) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    bail!("fused-attn cpu: path {} needs {}, which this CPU lacks", path.name(), missing.join(", "))
}

impl fmt::Display for CpuPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CpuPath {
    type Err = candle_core::Error;

    fn from_str(s: &str) -> Result<Self> {
        match CpuPath::ALL.into_iter().find(|p| p.name() == s.trim()) {
            Some(p) => Ok(p),
            None => {
                let names: Vec<_> = CpuPath::ALL.iter().map(|p| p.name()).collect();
                bail!("fused-attn cpu: unknown CPU path {s:?}; the paths are {}", names.join(", "))
            }
        }
    }
}

/// Whether this CPU has the feature, one of the names [`CpuPath::required_features`] uses.
fn has_feature(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx512f" => is_x86_feature_detected!("avx512f"),
            "avx2" => is_x86_feature_detected!("avx2"),
            "fma" => is_x86_feature_detected!("fma"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// The paths this CPU can run, widest instruction set first.
#[doc(hidden)]
pub fn cpu_paths() -> Vec<CpuPath> {
    supported_paths().to_vec()
}

/// [`cpu_paths`], detected once; never empty (`portable-gemm` runs everywhere).
fn supported_paths() -> &'static [CpuPath] {
    static PATHS: std::sync::OnceLock<Vec<CpuPath>> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| CpuPath::ALL.into_iter().filter(|p| p.missing_features().is_empty()).collect())
}

/// The environment variable that forces a path for the whole process (read once).
const PATH_VAR: &str = "FUSED_ATTN_CPU_PATH";

thread_local! {
    /// The path [`with_cpu_path`] forces on this thread.
    static FORCED: Cell<Option<CpuPath>> = const { Cell::new(None) };
}

/// Runs `f` with every CPU attention call that it makes on this thread forced onto `path`
/// (calls that `f` hands to other threads, e.g. through a rayon pool's `install`, are
/// not). An error, before `f` runs, when this CPU cannot run `path`.
#[doc(hidden)]
pub fn with_cpu_path<R>(path: CpuPath, f: impl FnOnce() -> R) -> Result<R> {
    path.check_supported()?;
    struct Restore(Option<CpuPath>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(Some(path))));
    Ok(f())
}

/// The path [`PATH_VAR`] names, if it is set.
fn env_path() -> Result<Option<CpuPath>> {
    static ENV: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    match ENV.get_or_init(|| std::env::var(PATH_VAR).ok()) {
        None => Ok(None),
        Some(name) => name.parse().map(Some).map_err(|e| candle_core::Error::Msg(format!("{PATH_VAR}: {e}"))),
    }
}

/// The path of one call: [`with_cpu_path`]'s on this thread, else [`PATH_VAR`]'s, else
/// [`auto_path`]'s; an error when the forced path cannot run on this CPU.
fn path_for(p: &Problem) -> Result<CpuPath> {
    let path = match FORCED.with(|c| c.get()) {
        Some(path) => path,
        None => match env_path()? {
            Some(path) => path,
            None => return Ok(auto_path(p)),
        },
    };
    path.check_supported()?;
    Ok(path)
}

/// The path chosen when none is forced: `avx2-kernels` wherever its hand-written products
/// run (prefill, `head_dim % 8 == 0`) and the CPU has AVX2 + FMA, AVX-512 CPUs included;
/// otherwise the widest path the CPU runs. The same for every dtype.
///
/// MEASUREMENTS
fn auto_path(p: &Problem) -> CpuPath {
    let paths = supported_paths();
    if forward::packs_kv(p) && p.head_dim.is_multiple_of(8) && paths.contains(&CpuPath::Avx2Kernels) {
        return CpuPath::Avx2Kernels;
    }
    paths[0]
}

/// The dispatch table: the attend loop compiled for `path`'s instruction set and
/// strategy, for the element type `T` (f32, f16, bf16). An error, never a kernel, when the
/// CPU lacks the path's features.
fn kernel<T: Element>(path: CpuPath) -> Result<AttendFn<T>> {
    path.check_supported()?;
    Ok(match path {
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx512Gemm => attend_avx512_gemm::<T>,
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx2Kernels => attend_avx2_kernels::<T>,
        #[cfg(not(target_arch = "x86_64"))]
        CpuPath::Avx512Gemm | CpuPath::Avx2Kernels => bail!("fused-attn cpu: path {path} exists on x86-64 only"),
        CpuPath::PortableGemm => attend_portable_gemm::<T>,
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512_gemm<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, false>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2_kernels<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, true>(ctx, it, sc) }
}

unsafe fn attend_portable_gemm<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's.
    unsafe { forward::attend::<T, false>(ctx, it, sc) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_the_cpu_lacks_is_an_error_naming_it_and_the_features() {
        let err = check_features(CpuPath::Avx512Gemm, vec!["avx512f"]).unwrap_err().to_string();
        assert!(err.contains("avx512-gemm") && err.contains("avx512f"), "{err}");
        check_features(CpuPath::Avx2Kernels, vec![]).unwrap();
        for path in CpuPath::ALL {
            assert_eq!(path.check_supported().is_ok(), cpu_paths().contains(&path));
            assert_eq!(kernel::<f32>(path).is_ok(), cpu_paths().contains(&path));
        }
    }

    #[test]
    fn paths_parse_from_their_names() {
        for path in CpuPath::ALL {
            assert_eq!(path.name().parse::<CpuPath>().unwrap(), path);
        }
        let err = "avx512".parse::<CpuPath>().unwrap_err().to_string();
        assert!(err.contains("avx512-gemm, avx2-kernels, portable-gemm"), "{err}");
    }

    #[test]
    fn auto_path_sends_prefill_with_d_a_multiple_of_8_to_the_avx2_kernels() {
        let prefill = Problem {
            batch: 1,
            seq_q: 512,
            seq_k: 512,
            heads: 8,
            kv_heads: 8,
            head_dim: 64,
            scale: 0.125,
            softcap: 0.0,
            window_left: -1,
            window_right: -1,
            has_alibi: false,
            layout: Default::default(),
            want_lse: false,
        };
        let widest = cpu_paths()[0];
        let prefill_path = if cpu_paths().contains(&CpuPath::Avx2Kernels) { CpuPath::Avx2Kernels } else { widest };
        assert_eq!(auto_path(&prefill), prefill_path);
        assert_eq!(auto_path(&Problem { seq_q: 1, ..prefill }), widest);
        assert_eq!(auto_path(&Problem { head_dim: 100, ..prefill }), widest);
    }

    #[test]
    fn portable_gemm_runs_everywhere() {
        assert_eq!(cpu_paths().last(), Some(&CpuPath::PortableGemm));
    }
}
