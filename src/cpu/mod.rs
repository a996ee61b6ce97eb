//! CPU forward: FlashAttention-2 on the CPU.
//!
//! **What it computes.** `out = softmax(s) v` per (batch, q head, query row), with
//! `s = scale·<q,k>`, then softcap, ALiBi and the bottom-right masks of [`Problem`],
//! without an `Sq×Sk` buffer: keys are visited in tiles of 256 (steps of 4 such tiles on
//! the AMX path) and the softmax is kept
//! online (running row max `m`, running sum `l`, f32 accumulator), as FlashAttention-2 does.
//! Scores are kept in base 2 (`log2(e)` is folded into Q's scale), so the exponentials are
//! `2^x`. f16/bf16 inputs are converted to f32 per tile and all arithmetic is f32, except
//! on the two bf16 paths, whose tile products multiply bf16 (Q, K, V and P rounded to bf16,
//! as the GPU path does) with f32 sums.
//!
//! **Files.**
//! - `mod.rs` (here): the entries [`forward()`] (a fresh output) and [`forward_into`] (the
//!   caller's, `attention_varlen_into`), both through one [`write()`], the kernel paths
//!   ([`CpuPath`]) and the dispatch table ([`kernel`]).
//! - `forward.rs`: work items on rayon; per item the loop over key tiles (scores, online
//!   softmax step, `P V`) in one of four product strategies; the merge of key splits.
//! - `pack.rs`: the element types and strided input rows; K transposed and V, packed once
//!   per prefill call into line-aligned f32 tiles, in buffers kept between calls.
//! - `softmax.rs`: the softmax's portable row passes and the `2^x` they share.
//! - `avx2.rs`: hand-written AVX2 + FMA tile products and softmax passes.
//! - `avx512.rs`: AVX-512F tile products (f32 FMAs, or `vdpbf16ps` on bf16 pairs) and
//!   softmax passes, including the pass that writes P as bf16.
//! - `amx.rs`: AMX-BF16 tile products in `asm!`, and the OS permission for the tile state.
//!
//! **Work split.** One work item is (batch, kv head, query block, key split). Its rows are
//! the query positions of the block × the q heads that share the kv head (GQA/MQA, 48 rows
//! in all), so one K/V tile serves every head of the group. Prefill calls (several query
//! blocks) pack K and V once; decode-like calls (one query block) read them in place.
//! Calls with `sq ≤ 16` and too few items for the threads also split the keys (split-KV):
//! each split returns its partial `(m, l, acc)` and a merge rescales and adds them.
//!
//! **Packed (varlen) and paged batches.** A call is a list of sequences ([`forward::SeqIn`]):
//! the batch entries of a dense call, or the sequences of a packed one, each with its own
//! batch-1 problem ([`Problem::sequence`]), path, query blocks, K/V packing and key splits,
//! decided exactly as a dense call on that sequence alone decides them, so a packed
//! sequence's output and LSE are bit for bit the dense call's. The items of all sequences
//! run in waves (`forward::run_items`): a long sequence is a wave of its own, short ones
//! share one; a wave packs its sequences' keys ([`pack::SharedKv`]) right before its items
//! run in one parallel loop, so both threads work on every wave. Sequences without queries
//! or keys have no items (zero rows, LSE `-inf`).
//! Paged K/V are read in place through the block table ([`pack::PageMap`]); only a tile
//! that straddles pages is copied (f32) or converted (f16/bf16) into per-thread scratch, as
//! every f16/bf16 tile already is. Head dims up to [`crate::MAX_HEAD_DIM`] (512) on every
//! path: no buffer or register tile is sized for a smaller one.
//!
//! **Dispatch.** One table, dtype × instruction set × product strategy: [`forward()`] matches
//! the dtype (f32, f16, bf16) once, and [`kernel`] gives the `attend` loop compiled for a
//! [`CpuPath`]:
//!
//! | path             | compiled for        | prefill tile products                          | softmax max, `2^x` | needs                                   |
//! |------------------|---------------------|------------------------------------------------|--------------------|-----------------------------------------|
//! | `avx512-amx`     | AVX-512F/DQ, AVX512-BF16 | bf16, d % 32 = 0: `amx.rs` tiles; else as `avx512-bf16` | `avx512.rs` | avx512f, avx512dq, avx512bf16, amx-tile, amx-bf16, OS permission |
//! | `avx512-bf16`    | AVX-512F/DQ, AVX512-BF16 | bf16, even d: `avx512.rs` `vdpbf16ps`; else as `avx512-kernels` | `avx512.rs` | avx512f, avx512dq, avx512bf16, avx2, fma |
//! | `avx512-kernels` | AVX-512F            | `avx512.rs` f32 kernels (any d)                | `avx512.rs`        | avx512f, avx2, fma                      |
//! | `avx512-gemm`    | AVX-512F            | `gemm` crate                                   | vectorized loops   | avx512f, avx2, fma                      |
//! | `avx2-kernels`   | AVX2 + FMA          | `avx2.rs` kernels (d % 8 = 0)                  | `avx2.rs`          | avx2, fma                               |
//! | `portable-gemm`  | baseline            | `gemm` crate                                   | loops              | –                                       |
//!
//! Decode-like calls use dot products and axpys (≤ 8 rows per kv head; single-query items
//! take every kv head, so that each key's rows are read in memory order) or `gemm`: on the
//! AVX-512 paths f32, bf16 and f16 rows go through the `avx512.rs` direct kernels (bf16 and
//! f16 converted in registers), elsewhere through loops compiled for the path (f16/bf16 rows
//! converted one at a time into an L1 buffer); both ask for each next chunk of keys in L2.
//! `gemm` picks its own SIMD kernels at run time on every path. `portable-gemm` is the path
//! of CPUs without AVX2 + FMA and of other architectures; on x86-64 its `f32::mul_add`s (the
//! `2^x` polynomial, the decode loops) are library calls, which makes it about 20× slower
//! than the others on the bench rows.
//! f16 inputs are converted to f32 (F16C) on every path: AVX512-FP16 has no f16 product
//! with f32 sums, and f16 sums would lose the accuracy the f32 path keeps.
//!
//! **Choice.** Unforced, a prefill call (several query blocks) takes `avx512-amx` for bf16
//! with `head_dim % 32 == 0` where the CPU and OS allow AMX, else, for bf16 with an even
//! head dim on AMD's AVX512-BF16 cores (Zen 4 and later), `avx512-bf16`, else
//! `avx512-kernels` where the CPU has AVX-512F, else `avx2-kernels` (d % 8 = 0), else the
//! widest path; decode-like calls take `avx512-kernels`, else the widest path:
//! [`auto_path`], with the measurements beside it. `vdpbf16ps` pays only where it is fast:
//! on a Zen 4 core it gives twice the flops of `vfmadd231ps` (`bench_cpu --peaks`: 230
//! against 114 GFLOP/s per core), and `avx512-bf16` ran bf16 prefill 1.2–1.9× faster than
//! `avx512-kernels`; on the Sapphire Rapids cores measured, `vdpbf16ps` zmm retires one per
//! 2 cycles where `vfmadd231ps` zmm retires two per cycle, half the f32 FMA rate (110
//! against 220 GFLOP/s per core), so there bf16 without AMX takes `avx512-kernels` (bf16
//! converted to f32 runs at the f32 rate).

//! **Overrides.** `FUSED_ATTN_CPU_PATH=<path>` forces a path for the process (read once);
//! the hidden `with_cpu_path(path, f)` forces one for the calls `f` makes on its thread
//! (tests run every path the CPU has through it; `cpu_paths()` lists them). A forced path
//! the CPU lacks is an error naming the missing features.
//!
//! **Kept memory.** The packed K/V buffers of a prefill call (K and V in f32, about the size
//! of K and V themselves, never Sq×Sk) are kept for the next call, sparing their page
//! faults. The two kept buffers hold at most `FUSED_ATTN_CPU_KEEP_MIB` MiB together
//! (read once; default 256; 0 keeps none); a larger call frees its own when it ends.
//! The per-thread scratch buffers of the parallel loop (S, P, the accumulator: a few
//! hundred KiB each, at most 64 of them) are kept too, unless that bound is 0.
//! [`release_cpu_buffers`] frees both.
//!
//! The measurements behind these choices, and the versions that led here:
//! `lab/cpu-history.md`.

use std::cell::Cell;
use std::fmt;
use std::mem::MaybeUninit;
use std::str::FromStr;

use candle_core::{backend::BackendStorage, bail, CpuStorage, Layout, Result};
use half::{bf16, f16};

use crate::problem::{Problem, Strides};

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub(crate) mod backward;
mod forward;
mod pack;
mod softmax;

use forward::{AttendFn, Ctx, Item, Scratch, SeqIn};

/// Frees the buffers the CPU path keeps between calls (the packed K/V of the last prefill
/// calls and the per-thread scratch of the last parallel loops), and returns how many
/// bytes they held. A call running meanwhile gives its buffers back when it ends.
pub fn release_cpu_buffers() -> usize {
    pack::release_kv_buffers() + forward::release_scratch()
}
use pack::{Element, Input, PageMap};

/// The forward into a fresh output of q's shape: `(out, lse)`, the LSE when
/// `p.want_lse`.
pub(crate) fn forward(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    alibi: Option<&[f32]>,
) -> Result<(CpuStorage, Option<Vec<f32>>)> {
    check_call(p, alibi)?;
    match (q, k, v) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => {
            fresh::<f32>(p, (q, ql), (k, kl), (v, vl), alibi)
        }
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v)) => {
            fresh::<f16>(p, (q, ql), (k, kl), (v, vl), alibi)
        }
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v)) => {
            fresh::<bf16>(p, (q, ql), (k, kl), (v, vl), alibi)
        }
        _ => bail!(
            "fused-attn cpu: q, k and v must share one of f32, f16, bf16; got {:?}, {:?}, {:?}",
            q.dtype(),
            k.dtype(),
            v.dtype()
        ),
    }
}

/// The forward into the caller's `out` (q's shape and dtype, contiguous from its layout's
/// start offset): every element is written, whatever it held. No LSE (`p.want_lse` must
/// be false).
pub(crate) fn forward_into(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    alibi: Option<&[f32]>,
    (out, ol): (&mut CpuStorage, &Layout),
) -> Result<()> {
    check_call(p, alibi)?;
    if p.want_lse {
        bail!("fused-attn internal: a forward into a caller's output keeps no log-sum-exp")
    }
    let n = ql.shape().elem_count();
    let (start, end) = match ol.contiguous_offsets() {
        Some((s, e)) if ol.dims() == ql.dims() && e - s == n => (s, e),
        _ => bail!(
            "fused-attn internal: the output (shape {:?}, strides {:?}) is not a contiguous tensor of q's shape {:?}",
            ol.dims(),
            ol.stride(),
            ql.dims()
        ),
    };
    let (dq, dout) = (q.dtype(), out.dtype());
    match (q, k, v, out) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v), CpuStorage::F32(o)) => {
            into::<f32>(p, (q, ql), (k, kl), (v, vl), alibi, &mut o[start..end])
        }
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v), CpuStorage::F16(o)) => {
            into::<f16>(p, (q, ql), (k, kl), (v, vl), alibi, &mut o[start..end])
        }
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v), CpuStorage::BF16(o)) => {
            into::<bf16>(p, (q, ql), (k, kl), (v, vl), alibi, &mut o[start..end])
        }
        _ => bail!(
            "fused-attn cpu: q, k, v and out must share one of f32, f16, bf16; got {dq:?}, {:?}, {:?}, {dout:?}",
            k.dtype(),
            v.dtype()
        ),
    }
}

/// What every forward checks before it reads anything.
fn check_call(p: &Problem, alibi: Option<&[f32]>) -> Result<()> {
    if let Some(a) = alibi {
        if a.len() != p.batch * p.heads {
            bail!("fused-attn cpu: expected {} alibi slopes (batch × heads), got {}", p.batch * p.heads, a.len())
        }
    }
    pack::keep_limit_bytes()?;
    Ok(())
}

/// [`write()`] into a fresh buffer ([`pack::output_buffer`]).
fn fresh<T: Element>(
    p: &Problem,
    q: (&[T], &Layout),
    k: (&[T], &Layout),
    v: (&[T], &Layout),
    alibi: Option<&[f32]>,
) -> Result<(CpuStorage, Option<Vec<f32>>)> {
    let n = q.1.shape().elem_count();
    let mut out: Vec<T> = pack::output_buffer(n)?;
    let lse = write(p, q, k, v, alibi, &mut out.spare_capacity_mut()[..n])?;
    // SAFETY: `write` returned Ok, so it initialized all `n` elements (`forward::run`).
    unsafe { out.set_len(n) };
    Ok((T::to_cpu_storage_owned(out), lse))
}

/// [`write()`] into the caller's initialized `out`.
fn into<T: Element>(
    p: &Problem,
    q: (&[T], &Layout),
    k: (&[T], &Layout),
    v: (&[T], &Layout),
    alibi: Option<&[f32]>,
    out: &mut [T],
) -> Result<()> {
    // SAFETY: `MaybeUninit<T>` has `T`'s size, alignment and layout, and `write` stores only
    // initialized values through the view (`forward::run`), so `out` stays initialized.
    let out = unsafe { &mut *(std::ptr::from_mut::<[T]>(out) as *mut [MaybeUninit<T>]) };
    write(p, q, k, v, alibi, out).map(drop)
}

/// The forward of one dtype into `out` (q's element count; every element written): the
/// call cut into its sequences ([`forward::SeqIn`]), each with its own path, all run by
/// [`forward::run`].
fn write<T: Element>(
    p: &Problem,
    (q, ql): (&[T], &Layout),
    (k, kl): (&[T], &Layout),
    (v, vl): (&[T], &Layout),
    alibi: Option<&[f32]>,
    out: &mut [MaybeUninit<T>],
) -> Result<Option<Vec<f32>>> {
    let (h, hkv, d) = (p.heads, p.kv_heads, p.head_dim);
    let slopes = |b: usize| alibi.map(|a| &a[b * h..][..h]);
    let dims = (h, hkv, d);
    let Some(packed) = p.packed() else {
        let (qs, ks, vs) = (Strides::from_layout(ql)?, Strides::from_layout(kl)?, Strides::from_layout(vl)?);
        let (b, sq, sk) = (p.batch, p.seq_q, p.seq_k);
        if b * sq * h * d == 0 || sk == 0 || hkv == 0 {
            return forward::run::<T>(Vec::new(), out, b * sq, b, p.want_lse, dims);
        }
        let (qi, ki, vi) = (
            Input::new((q, qs), (b, sq, h), d, "q")?,
            Input::new((k, ks), (b, sk, hkv), d, "k")?,
            Input::new((v, vs), (b, sk, hkv), d, "v")?,
        );
        let path = path_for::<T>(p)?;
        let (attend, pairs) = (kernel::<T>(path)?, path.bf16_pairs::<T>(d));
        let one = Problem { batch: 1, ..p.clone() };
        let seqs = (0..b)
            .map(|bi| SeqIn {
                p: one.clone(),
                q: qi.shifted(bi, 0),
                k: ki.shifted(bi, 0),
                v: vi.shifted(bi, 0),
                alibi: slopes(bi),
                out_row0: bi * sq,
                lse0: bi * h * sq,
                lse_head: sq,
                attend,
                pairs,
            })
            .collect();
        return forward::run::<T>(seqs, out, b * sq, b, p.want_lse, dims);
    };
    let total_q = packed.total_q();
    let qs = packed_strides(ql, "q")?;
    if total_q * h * d == 0 || hkv == 0 {
        return forward::run::<T>(Vec::new(), out, total_q, 1, p.want_lse, dims);
    }
    let qi = Input::new((q, qs), (1, total_q, h), d, "q")?;
    let (ks, vs) = (packed_strides(kl, "k")?, packed_strides(vl, "v")?);
    let mut seqs = Vec::with_capacity(packed.batch());
    for b in 0..packed.batch() {
        let sp = p.sequence(b);
        let (lq, lk) = (sp.seq_q, sp.seq_k);
        if lq == 0 || lk == 0 {
            continue; // zero rows, LSE -inf: what `forward::run` leaves for rows no item writes
        }
        let (ki, vi) = match &packed.pages {
            None => (
                Input::new((k, ks), (1, packed.cu_k[packed.batch()], hkv), d, "k")?.shifted(0, packed.cu_k[b]),
                Input::new((v, vs), (1, packed.cu_k[packed.batch()], hkv), d, "v")?.shifted(0, packed.cu_k[b]),
            ),
            Some(pg) => {
                let table = &pg.table[b * pg.max_blocks..][..pg.max_blocks];
                // Rank 4: the block stride; rank 3 `(blocks·page, heads, d)`: a page of rows.
                let map = |st: Strides, l: &Layout| PageMap {
                    table,
                    size: pg.page_size,
                    block: if l.dims().len() == 4 { st.batch } else { pg.page_size * st.seq },
                };
                (
                    Input::paged((k, ks), map(ks, kl), (pg.num_blocks, lk, hkv), d, "k")?,
                    Input::paged((v, vs), map(vs, vl), (pg.num_blocks, lk, hkv), d, "v")?,
                )
            }
        };
        let path = path_for::<T>(&sp)?;
        let (attend, pairs) = (kernel::<T>(path)?, path.bf16_pairs::<T>(d));
        let row0 = packed.cu_q[b];
        seqs.push(SeqIn {
            p: sp,
            q: qi.shifted(0, row0),
            k: ki,
            v: vi,
            alibi: slopes(b),
            out_row0: row0,
            lse0: row0,
            lse_head: total_q,
            attend,
            pairs,
        });
    }
    forward::run::<T>(seqs, out, total_q, 1, p.want_lse, dims)
}

/// The strides of a packed input as `(batch, seq, heads, d)` strides: rank 3 `(rows,
/// heads, d)` (batch stride 0), or rank 4 `(blocks, page, heads, d)` of a paged cache
/// (batch stride = block stride).
fn packed_strides(l: &Layout, name: &str) -> Result<Strides> {
    let (s, dims) = (l.stride(), l.dims());
    let contiguous_d = |r: usize| dims[r] <= 1 || s[r] == 1;
    match s.len() {
        3 if contiguous_d(2) => Ok(Strides { offset: l.start_offset(), batch: 0, seq: s[0], head: s[1] }),
        4 if contiguous_d(3) => Ok(Strides { offset: l.start_offset(), batch: s[0], seq: s[1], head: s[2] }),
        _ => bail!("fused-attn internal: {name} has an unexpected packed layout: shape {dims:?}, strides {s:?}"),
    }
}

/// A CPU kernel path: the instruction set the attend loop is compiled for, and how it
/// computes the tile products. Forcing one is for tests and measurements (see the module
/// header); [`cpu_paths`] lists those this CPU can run.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuPath {
    /// As `avx512-bf16`, with the bf16 prefill tile products (`head_dim % 32 == 0`) on AMX
    /// tiles (`cpu/amx.rs`) instead of `vdpbf16ps`.
    Avx512Amx,
    /// As `avx512-kernels`, with the bf16 prefill tile products (even `head_dim`) as bf16
    /// pair dot products with f32 sums (`vdpbf16ps`, `cpu/avx512.rs`) and P rounded to
    /// bf16 for `P V`.
    Avx512Bf16,
    /// The prefill tile products (any head dim) and the softmax's row max and `2^x` passes
    /// in the hand-written AVX-512F kernels (`cpu/avx512.rs`), f16/bf16 converted to f32;
    /// the rest compiled for AVX-512F.
    Avx512Kernels,
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
    pub const ALL: [CpuPath; 6] = [
        CpuPath::Avx512Amx,
        CpuPath::Avx512Bf16,
        CpuPath::Avx512Kernels,
        CpuPath::Avx512Gemm,
        CpuPath::Avx2Kernels,
        CpuPath::PortableGemm,
    ];

    /// The name that `FUSED_ATTN_CPU_PATH` takes.
    pub fn name(self) -> &'static str {
        match self {
            CpuPath::Avx512Amx => "avx512-amx",
            CpuPath::Avx512Bf16 => "avx512-bf16",
            CpuPath::Avx512Kernels => "avx512-kernels",
            CpuPath::Avx512Gemm => "avx512-gemm",
            CpuPath::Avx2Kernels => "avx2-kernels",
            CpuPath::PortableGemm => "portable-gemm",
        }
    }

    /// The CPU features the path's code is compiled for (`amx-os`: the OS grants this
    /// process the AMX tile state).
    pub fn required_features(self) -> &'static [&'static str] {
        match self {
            CpuPath::Avx512Amx => {
                &["avx512f", "avx512dq", "avx512bf16", "avx2", "fma", "amx-tile", "amx-bf16", "amx-os"]
            }
            CpuPath::Avx512Bf16 => &["avx512f", "avx512dq", "avx512bf16", "avx2", "fma"],
            CpuPath::Avx512Kernels | CpuPath::Avx512Gemm => &["avx512f", "avx2", "fma"],
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
        lacking_message(self, &self.missing_features()).map_or(Ok(()), |m| Err(candle_core::Error::Msg(m)))
    }

    /// Whether the path multiplies bf16 pairs (and so packs K and V as bf16 pairs) for
    /// prefill calls in `T` with head dim `d`: bf16 inputs with an even `d` on the two bf16
    /// paths.
    fn bf16_pairs<T: Element>(self, d: usize) -> bool {
        matches!(self, CpuPath::Avx512Amx | CpuPath::Avx512Bf16)
            && T::DTYPE == candle_core::DType::BF16
            && d.is_multiple_of(2)
    }
}

/// The error message for a path whose `missing` features this CPU lacks; none if none.
fn lacking_message(path: CpuPath, missing: &[&str]) -> Option<String> {
    (!missing.is_empty())
        .then(|| format!("fused-attn cpu: path {} needs {}, which this CPU lacks", path.name(), missing.join(", ")))
}

impl fmt::Display for CpuPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CpuPath {
    type Err = candle_core::Error;

    fn from_str(s: &str) -> Result<Self> {
        parse_path(s).map_err(candle_core::Error::Msg)
    }
}

/// The path named `s`, or a message listing the names.
fn parse_path(s: &str) -> std::result::Result<CpuPath, String> {
    CpuPath::ALL.into_iter().find(|p| p.name() == s.trim()).ok_or_else(|| {
        let names: Vec<_> = CpuPath::ALL.iter().map(|p| p.name()).collect();
        format!("fused-attn cpu: unknown CPU path {s:?}; the paths are {}", names.join(", "))
    })
}

/// Whether this CPU has the feature, one of the names [`CpuPath::required_features`] uses.
pub(super) fn has_feature(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx512f" => is_x86_feature_detected!("avx512f"),
            "avx512dq" => is_x86_feature_detected!("avx512dq"),
            "avx512bf16" => is_x86_feature_detected!("avx512bf16"),
            "amx-tile" | "amx-bf16" => amx::cpu_has_amx(),
            "amx-os" => amx::os_permits_amx(),
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
    detect().to_vec()
}

/// The paths this CPU supports, widest first, detected once; never empty (`portable-gemm`
/// runs everywhere).
fn detect() -> &'static [CpuPath] {
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

/// The path [`PATH_VAR`] names, if it is set and not empty.
fn env_path() -> Result<Option<CpuPath>> {
    static ENV: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let name = ENV.get_or_init(|| std::env::var_os(PATH_VAR).map(|v| v.to_string_lossy().into_owned()));
    match name.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(name) => parse_path(name).map(Some).map_err(|m| candle_core::Error::Msg(format!("{m} (from {PATH_VAR})"))),
    }
}

/// The path forced on this thread ([`with_cpu_path`]) or for the process ([`PATH_VAR`]),
/// if any (the backward follows it for its instruction set).
pub(super) fn forced_path() -> Option<CpuPath> {
    FORCED.with(|c| c.get()).or_else(|| env_path().ok().flatten())
}

/// The path of one call: [`with_cpu_path`]'s on this thread, else [`PATH_VAR`]'s, else
/// [`auto_path`]'s; an error when the forced path cannot run on this CPU.
fn path_for<T: Element>(p: &Problem) -> Result<CpuPath> {
    if let Some(path) = FORCED.with(|c| c.get()) {
        path.check_supported()?;
        return Ok(path);
    }
    match env_path()? {
        Some(path) => match lacking_message(path, &path.missing_features()) {
            Some(m) => Err(candle_core::Error::Msg(format!("{m} (forced by {PATH_VAR})"))),
            None => Ok(path),
        },
        None => Ok(auto_path(p, T::DTYPE == candle_core::DType::BF16)),
    }
}

/// Whether this CPU's `vdpbf16ps` zmm delivers about twice the flops of its `vfmadd231ps`
/// zmm, so that bf16 tile products beat bf16 converted to f32: AMD's AVX512-BF16 cores (Zen
/// 4 and later; `bench_cpu --peaks` on a 2-vCPU Zen 4 EPYC guest, family 25 model 17, one
/// core: 229.6 against 114.4 GFLOP/s, ratio 1.99), not the Intel cores measured (Sapphire
/// Rapids: 110 against 217–222, ratio 0.5). Read from the CPUID vendor once.
fn bf16_dot_at_twice_fma_rate() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AMD.get_or_init(|| {
            let r = std::arch::x86_64::__cpuid(0);
            let mut vendor = [0u8; 12];
            vendor[..4].copy_from_slice(&r.ebx.to_le_bytes());
            vendor[4..8].copy_from_slice(&r.edx.to_le_bytes());
            vendor[8..].copy_from_slice(&r.ecx.to_le_bytes());
            &vendor == b"AuthenticAMD"
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The path chosen when none is forced (`bf16`: the inputs are bf16): for prefill,
/// `avx512-amx` for bf16 with `head_dim % 32 == 0` where the CPU and OS allow AMX, else
/// `avx512-bf16` for bf16 with an even head dim where `vdpbf16ps` runs at twice the FMA's
/// flop rate ([`bf16_dot_at_twice_fma_rate`]), else `avx512-kernels` where the CPU has
/// AVX-512F, else `avx2-kernels` when `head_dim % 8 == 0`; for decode-like calls
/// `avx512-kernels`; otherwise the widest path the CPU runs.
///
/// Measured on a Zen 4 (2-vCPU AMD EPYC KVM guest, family 25 model 17; avx512f/bw/vl,
/// avx512_bf16, no AMX), 2 rayon threads pinned, `bench_cpu --row R --dtype bf16 --path P`,
/// the two paths alternating, two rounds, medians (ms, `avx512-kernels` / `avx512-bf16`):
/// (1,16,16,2048,2048,64) 89.1–103.9 / 50.8–54.9, causal 48.5–55.5 / 28.3–31.1;
/// (1,8,8,512,512,64) 4.7–7.5 / 4.2–4.9; (1,8,8,1024,1024,128) 25.5–25.6 / 13.9–16.2;
/// (1,32,8,1024,1024,128) causal 52.4–53.3 / 30.2–31.4; (1,8,2,300,2000,96) 12.7–16.3 /
/// 8.1–10.5; (1,32,8,16,4096,128) 13.8–14.0 / 8.5; (1,4,4,2048,2048,256) causal 49.8–51.1
/// / 26.6; d48 (1,8,8,1024,1024) 13.0–13.9 / 10.8–11.2; d80 (1,8,8,512,512) 8.4–8.9 /
/// 4.4–5.4; (1,8,8,100,3000,64) 9.0–10.4 / 6.6–7.4.
///
/// Measured on the development Xeon (KVM guest of 2 vCPUs, "Intel(R) Xeon(R) Processor",
/// family 6 model 167; avx512f/bw/vl, avx512_bf16, avx512_fp16, amx_bf16/tile, avx2, fma),
/// 2 rayon threads, `examples/bench_cpu.rs` with the path forced, the paths alternating,
/// the host loaded 4–7 (every time about twice its quiet value, the ratios stable):
/// at (1,16,16,2048,2048,64) f32, `avx512-kernels` 155–162 ms, `avx2-kernels` 215 ms,
/// `avx512-gemm` 247 ms; in bf16, `avx512-amx` 57 ms, `avx512-kernels` 153 ms,
/// `avx512-bf16` 206 ms (`vdpbf16ps` is never chosen: see below), `avx2-kernels` 212 ms. Quiet (load < 2):
/// `avx512-kernels` 74 ms and `avx512-amx` 28 ms at that row, against 105 ms for
/// `avx2-kernels` before. On the H100 machine's host (Xeon family 6 model 207, the same
/// features): 137 ms f32 and 54 ms bf16, from 257 and 260 ms.
///
/// Without AMX, bf16 prefill takes `avx512-kernels` (K and V packed as f32, P kept f32),
/// not `avx512-bf16`: `vdpbf16ps` zmm retires one per 2 cycles on these cores (64 flops)
/// against two `vfmadd231ps` zmm per cycle (2 × 32), so its ceiling is half the f32
/// kernels' (`bench_cpu --peaks`, one core of the dev Xeon: 110 against 217–222 GFLOP/s;
/// ymm `vdpbf16ps` no faster per instruction). Measured 2026-11-26 on the dev Xeon, one
/// thread pinned, bf16 (1,8,8,512,512,64): `avx512-kernels` 4.2 ms, `avx512-bf16` 5.9–6.1
/// ms, its two tile kernels 83% of the samples at about 110 GFLOP/s, the instruction's
/// ceiling. The record: `lab/cpu-history.md`.
fn auto_path(p: &Problem, bf16: bool) -> CpuPath {
    let paths = detect();
    let has = |path| paths.contains(&path);
    let d = p.head_dim;
    if forward::packs_kv(p) {
        if bf16 && d.is_multiple_of(32) && has(CpuPath::Avx512Amx) {
            return CpuPath::Avx512Amx;
        }
        if bf16 && d.is_multiple_of(2) && has(CpuPath::Avx512Bf16) && bf16_dot_at_twice_fma_rate() {
            return CpuPath::Avx512Bf16;
        }
        if has(CpuPath::Avx512Kernels) {
            return CpuPath::Avx512Kernels;
        }
        if d.is_multiple_of(8) && has(CpuPath::Avx2Kernels) {
            return CpuPath::Avx2Kernels;
        }
    }
    if has(CpuPath::Avx512Kernels) {
        return CpuPath::Avx512Kernels;
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
        CpuPath::Avx512Amx => attend_amx::<T>,
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx512Bf16 => attend_avx512_bf16::<T>,
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx512Kernels => attend_avx512_kernels::<T>,
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx512Gemm => attend_avx512_gemm::<T>,
        #[cfg(target_arch = "x86_64")]
        CpuPath::Avx2Kernels => attend_avx2_kernels::<T>,
        #[cfg(not(target_arch = "x86_64"))]
        CpuPath::Avx512Amx
        | CpuPath::Avx512Bf16
        | CpuPath::Avx512Kernels
        | CpuPath::Avx512Gemm
        | CpuPath::Avx2Kernels => bail!("fused-attn cpu: path {path} exists on x86-64 only"),
        CpuPath::PortableGemm => attend_portable_gemm::<T>,
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bf16,avx2,fma")]
unsafe fn attend_amx<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features and the
    // OS's AMX permission.
    unsafe { forward::attend::<T, { forward::AMX }>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bf16,avx2,fma")]
unsafe fn attend_avx512_bf16<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, { forward::AVX512_BF16 }>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512_kernels<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, { forward::AVX512 }>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512_gemm<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, { forward::PORTABLE }>(ctx, it, sc) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2_kernels<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's; `kernel` checked the features.
    unsafe { forward::attend::<T, { forward::AVX2 }>(ctx, it, sc) }
}

unsafe fn attend_portable_gemm<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    // SAFETY: `attend`'s contract is the caller's.
    unsafe { forward::attend::<T, { forward::PORTABLE }>(ctx, it, sc) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_the_cpu_lacks_is_an_error_naming_it_and_the_features() {
        let err = lacking_message(CpuPath::Avx512Gemm, &["avx512f", "fma"]).unwrap();
        assert_eq!(err, "fused-attn cpu: path avx512-gemm needs avx512f, fma, which this CPU lacks");
        assert_eq!(lacking_message(CpuPath::Avx2Kernels, &[]), None);
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
        assert!(
            err.contains("avx512-amx, avx512-bf16, avx512-kernels, avx512-gemm, avx2-kernels, portable-gemm"),
            "{err}"
        );
    }

    #[test]
    fn auto_path_picks_the_widest_kernels_for_the_dtype_and_head_dim() {
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
            mm_ranges: None,
        };
        let paths = cpu_paths();
        let has = |p| paths.contains(&p);
        let first = |c: &[CpuPath]| c.iter().copied().find(|&p| has(p)).unwrap_or(paths[0]);
        use CpuPath::*;
        let f32_prefill = first(&[Avx512Kernels, Avx2Kernels]);
        assert_eq!(auto_path(&prefill, false), f32_prefill);
        // bf16 dot products where they run at twice the FMA rate (AMD), else f32 kernels.
        let bf16_dot: &[CpuPath] = if bf16_dot_at_twice_fma_rate() { &[Avx512Bf16] } else { &[] };
        let bf16_prefill = |amx: &[CpuPath]| first(&[amx, bf16_dot, &[Avx512Kernels, Avx2Kernels]].concat());
        assert_eq!(auto_path(&prefill, true), bf16_prefill(&[Avx512Amx]));
        let d48 = Problem { head_dim: 48, ..prefill.clone() };
        assert_eq!(auto_path(&d48, true), bf16_prefill(&[]));
        // An odd head dim has no bf16 pairs: the f32 kernels.
        let d47 = Problem { head_dim: 47, ..prefill.clone() };
        assert_eq!(auto_path(&d47, true), first(&[Avx512Kernels]));
        let d100 = Problem { head_dim: 100, ..prefill.clone() };
        assert_eq!(auto_path(&d100, false), first(&[Avx512Kernels]));
        let decode = Problem { seq_q: 1, ..prefill.clone() };
        assert_eq!(auto_path(&decode, true), first(&[Avx512Kernels]));
        assert_eq!(auto_path(&decode, false), first(&[Avx512Kernels]));
        // Zero-sized problems (the API returns before the back end) do not divide by zero.
        assert_eq!(auto_path(&Problem { heads: 0, ..prefill.clone() }, false), first(&[Avx512Kernels]));
        assert_eq!(auto_path(&Problem { heads: 0, kv_heads: 0, ..prefill.clone() }, true), first(&[Avx512Kernels]));
    }

    #[test]
    fn bf16_dot_rule_follows_the_cpu_vendor() {
        // The CPUID vendor string that the rule reads, against the kernel's view of it.
        let Some(vendor) = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| info.lines().find_map(|l| l.strip_prefix("vendor_id").map(String::from)))
        else {
            eprintln!("SKIPPED: bf16_dot_rule_follows_the_cpu_vendor: no vendor_id in /proc/cpuinfo");
            return;
        };
        let vendor = vendor.trim_start_matches([' ', '\t', ':']).trim();
        assert_eq!(bf16_dot_at_twice_fma_rate(), vendor == "AuthenticAMD", "vendor_id {vendor:?}");
    }

    #[test]
    fn portable_gemm_runs_everywhere() {
        assert_eq!(cpu_paths().last(), Some(&CpuPath::PortableGemm));
    }
}
