//! CPU backward: FlashAttention-2's backward pass on the CPU.
//!
//! **What it computes.** Given q, k, v, the forward's output `o`, its gradient `dO` and
//! the forward's per-row natural-log log-sum-exp `lse`, the gradients dq, dk and dv of the
//! attention of [`Problem`] (scale, softcap, ALiBi, bottom-right masks, GQA), without an
//! `Sq×Sk` buffer. With `s` the final score of row i and key j:
//! `D_i = Σ_c dO_ic·O_ic`, `P_ij = e^(s_ij - lse_i)` for visible keys (else 0),
//! `dV_j = Σ_i P_ij dO_i`, `dP_ij = <dO_i, V_j>`, `dS_ij = P_ij (dP_ij - D_i)`, times
//! `1 - tanh²` with a softcap, times `scale`; then `dQ_i = Σ_j dS_ij K_j` and
//! `dK_j = Σ_i dS_ij Q_i`, summed over the q heads of a kv head's group. ALiBi slopes
//! are constants. A row with no visible key (`lse = -inf`) contributes nothing and gets
//! zero gradients.
//!
//! **Work split.** First one pass converts Q and dO to f32 rows (zero-padded to `dp`, at
//! a padded stride) ordered (batch, kv head, position, q head of the group), computes
//! `D = rowsum(dO∘O)` and `lse·log2 e` per row, and flags rows holding a non-finite value;
//! O(S·D), like the inputs. A call is a list of sequences: the batch entries of a dense
//! call, or the sequences of a packed (varlen) one, each with its own batch-1 problem
//! ([`Problem::sequence`]: lengths, windows, multimodal ranges) and plan, decided as a
//! dense call on that sequence alone decides it, so a packed sequence's gradients are bit
//! for bit the dense call's. The key tiles of a (sequence, kv head) are cut into chunks of
//! about equal work (visible rows × keys, so causal masks balance), and one work item is
//! (sequence, kv head, chunk); the items of all sequences run in one parallel loop. An item
//! walks its chunk's key tiles in order. Per tile it holds the tile's K (row-major and
//! transposed) and Vᵀ in f32, and f32 dK/dV accumulators, and walks the query blocks whose
//! key ranges touch the tile (the others are never visited); a block's rows are its query
//! positions × the q heads of the group, consecutive in the converted buffers, so one K/V
//! tile serves the whole group and the block is one strided operand. dK and dV of the tile
//! are complete when the tile ends and are written out directly. dQ gets contributions
//! from every key tile: an item adds them, tile after tile, into an f32 buffer of its own
//! (its group's rows), and dq is each group's chunk buffers summed in chunk order. The cut
//! (tile size, chunks) depends only on the problem, never on the thread count, so every
//! rounding, and the result, is the same on any pool: tiles shrink (down to 16 keys) and a
//! group's tiles split into `⌈8 / (batch × kv heads)⌉` chunks until the call has 8 items
//! (enough for both cores here and a few more), so dQ is held about once when there are 8
//! or more (batch, kv head) groups and at most 8 times a group's rows otherwise (O(S·D)).
//!
//! **Per (query block, key tile).** `S = Q Kᵀ` and `dP = dO Vᵀ`, then one elementwise
//! pass that turns S into P (softcap, ALiBi, mask, `2^(s·log2 e - lse·log2 e)`) and dP
//! into dS, then `dV += Pᵀ dO`, `dK += dSᵀ Q` and `dQ += dS K`. Mask arithmetic runs only
//! on tiles that some row of the block sees partially; on fully visible tiles every row
//! takes the whole tile. The five products run in one register-blocked kernel
//! ([`matmul`]), `C (+)= A·B` with B row-major and A read through two strides (so that
//! `Pᵀ` and `dSᵀ` are read in place), compiled once per instruction set: 12 × 32 blocks
//! on AVX-512, 6 × 16 on AVX2 + FMA, 4 × 8 without FMA; head dims are padded with zeros
//! to a multiple of 16 inside the tiles so every d takes the same kernel. K and V of any
//! dtype are converted to f32 per tile; accumulation is f32 throughout.
//!
//! **Tiles and measurements.** 64 rows per query block × 128 keys per item. Measured at
//! (1,16,16,2048,2048,64) f32 on the 2-vCPU dev machine (Intel Xeon with AVX-512, KVM),
//! which other jobs kept at a load average of 5–12 throughout, so the figures are the
//! call's CPU time, single-thread (min to max of 7 calls): 360–440 ms with the AVX-512
//! kernels (about 100–120 GFLOP/s per core counting the backward as 2.5 × the forward's
//! `4·B·H·Sq·Sk·D`), against 230–270 ms for the forward in the same runs; 550–570 ms with
//! the AVX2 kernels; causal 220–230 ms (forward 120–130). Two threads took the same total
//! CPU time. Rows per block 48, 96, 128 and keys per item 64, 256 were all within the
//! noise (360–400 ms). In perf samples the five products take about 76% of the call (the
//! kernel alone reached 145–155 GFLOP/s on these shapes in a lightly loaded moment, 70% of
//! the measured 213 GFLOP/s FMA peak of a core), the elementwise pass 7%. Before Q and dO
//! were converted once per call, copying them per (block, tile) took about 5%. Peak RSS
//! grows by 55 MiB per call: the three outputs (24 MiB), the converted Q and dO (21 MiB)
//! and one copy of dQ in f32 (10.5 MiB).
//!
//! **NaN.** A masked (or empty-row) entry of P or dS is an exact 0, but `0 · NaN` is NaN,
//! so a NaN or infinity in Q, dO or K would reach, through a tile product, gradients that
//! do not depend on it (a key the row cannot see). Where a tile is partially visible and
//! the operand of a product holds a non-finite value, that product runs over each row's
//! visible keys only ([`masked_rows_t`], [`masked_rows`]), so NaN reaches exactly the
//! gradients that depend on it.

use candle_core::{backend::BackendStorage, bail, CpuStorage, Layout, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::f32::consts::LOG2_E;

use super::pack::{padded_stride, Element, Input};
use super::softmax::{exp2_f32, tanh_f32};
use crate::problem::{Problem, Strides};

/// Rows per query block (positions × q heads of the group), at least one position.
const ROWS_PER_BLOCK: usize = 64;
/// Keys per work item, at most; fewer when there would be too few items for the threads.
const KEYS_PER_ITEM: usize = 128;
/// The smallest key tile the split for parallelism goes down to.
const MIN_KEYS_PER_ITEM: usize = 16;
/// The row stride of the S/P, dP/dS, Kᵀ and Vᵀ tiles (at least KEYS_PER_ITEM).
const T_LD: usize = padded_stride(KEYS_PER_ITEM);
/// Head dims are padded with zeros to a multiple of this inside the tiles.
const D_ALIGN: usize = 16;

#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    p: &Problem,
    q: (&CpuStorage, &Layout),
    k: (&CpuStorage, &Layout),
    v: (&CpuStorage, &Layout),
    o: (&CpuStorage, &Layout),
    d_o: (&CpuStorage, &Layout),
    lse: &[f32],
    alibi: Option<&[f32]>,
) -> Result<(CpuStorage, CpuStorage, CpuStorage)> {
    backward_with(p, q, k, v, o, d_o, lse, alibi, Isa::of_call())
}

/// [`backward`] with the instruction set chosen by the caller (the tests run each one).
#[allow(clippy::too_many_arguments)]
fn backward_with(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    (o, ol): (&CpuStorage, &Layout),
    (d_o, dol): (&CpuStorage, &Layout),
    lse: &[f32],
    alibi: Option<&[f32]>,
    isa: Isa,
) -> Result<(CpuStorage, CpuStorage, CpuStorage)> {
    let lse_len: usize = p.lse_shape().iter().product();
    if lse.len() != lse_len {
        bail!("fused-attn cpu backward: expected {lse_len} lse values {:?}, got {}", p.lse_shape(), lse.len())
    }
    if let Some(a) = alibi {
        if a.len() != p.batch * p.heads {
            bail!(
                "fused-attn cpu backward: expected {} alibi slopes (batch × heads), got {}",
                p.batch * p.heads,
                a.len()
            )
        }
    }
    if p.packed().is_some_and(|pk| pk.pages.is_some()) {
        bail!("fused-attn: attention over a paged KV cache has no backward")
    }
    let strides = |l: &Layout| {
        if p.packed().is_some() {
            super::packed_strides(l, "backward input")
        } else {
            Strides::from_layout(l)
        }
    };
    let [qs, ks, vs, os, dos] = [ql, kl, vl, ol, dol].map(strides);
    let (qs, ks, vs, os, dos) = (qs?, ks?, vs?, os?, dos?);
    macro_rules! go {
        ($t:ty, $q:expr, $k:expr, $v:expr, $o:expr, $do:expr) => {{
            let (dq, dk, dv) = run::<$t>(p, ($q, qs), ($k, ks), ($v, vs), ($o, os), ($do, dos), lse, alibi, isa)?;
            Ok((
                <$t as candle_core::WithDType>::to_cpu_storage_owned(dq),
                <$t as candle_core::WithDType>::to_cpu_storage_owned(dk),
                <$t as candle_core::WithDType>::to_cpu_storage_owned(dv),
            ))
        }};
    }
    use CpuStorage::{BF16, F16, F32};
    match (q, k, v, o, d_o) {
        (F32(q), F32(k), F32(v), F32(o), F32(d_o)) => go!(f32, q, k, v, o, d_o),
        (F16(q), F16(k), F16(v), F16(o), F16(d_o)) => go!(f16, q, k, v, o, d_o),
        (BF16(q), BF16(k), BF16(v), BF16(o), BF16(d_o)) => go!(bf16, q, k, v, o, d_o),
        _ => bail!(
            "fused-attn cpu backward: q, k, v, out and the out gradient must share one of f32, f16, bf16; got {:?}, {:?}, {:?}, {:?}, {:?}",
            q.dtype(),
            k.dtype(),
            v.dtype(),
            o.dtype(),
            d_o.dtype()
        ),
    }
}

/// The instruction set the kernels are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Avx512,
    Avx2,
    Portable,
}

impl Isa {
    /// The instruction set of a call: that of the CPU path forced on this thread or
    /// process (`cpu/mod.rs`), else the widest the CPU has.
    fn of_call() -> Self {
        match super::forced_path() {
            Some(
                super::CpuPath::Avx512Amx
                | super::CpuPath::Avx512Bf16
                | super::CpuPath::Avx512Kernels
                | super::CpuPath::Avx512Gemm,
            ) => Isa::Avx512,
            Some(super::CpuPath::Avx2Kernels) => Isa::Avx2,
            Some(super::CpuPath::PortableGemm) => Isa::Portable,
            None => Isa::detect(),
        }
    }

    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                return Isa::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Whether this CPU can run the kernels of `self`.
    #[cfg(test)]
    fn available(self) -> bool {
        match (self, Isa::detect()) {
            (Isa::Portable, _) | (_, Isa::Avx512) => true,
            (Isa::Avx2, d) => d == Isa::Avx2,
            (Isa::Avx512, _) => false,
        }
    }
}

/// What every work item of one sequence shares. Rows are numbered in the order `(kv
/// head, position, q head of the group)` within a sequence, so that the rows of one query
/// block (its positions × the group's heads) are consecutive in every per-row buffer.
struct Ctx<'a, T> {
    /// The sequence's own problem, batch 1.
    p: Problem,
    /// Row `(0, j, kvh)` is key `j` of the sequence.
    k: Input<'a, T>,
    v: Input<'a, T>,
    /// Q and dO in f32, one row of `dld` per row (zeros past d), the sequence's rows.
    q: &'a [f32],
    d_o: &'a [f32],
    /// Per row: `lse·log2(e)`, `D = Σ dO∘O`, and bit 0 / bit 1 when its Q / dO row holds a
    /// non-finite value.
    lse2: &'a [f32],
    delta: &'a [f32],
    bad: &'a [u8],
    /// The sequence's `heads` ALiBi slopes.
    alibi: Option<&'a [f32]>,
    /// Query positions per block; rows per block = `q_block × group`.
    q_block: usize,
    /// The head dim padded to D_ALIGN: the width of every tile product over d.
    dp: usize,
    /// The row stride of every buffer that holds d columns.
    dld: usize,
}

/// Per-thread buffers, reused across items.
#[derive(Default)]
struct Scratch {
    /// K tile, row-major: keys × dld.
    k: Vec<f32>,
    /// Kᵀ and Vᵀ tiles: dp rows of T_LD.
    kt: Vec<f32>,
    vt: Vec<f32>,
    /// dK and dV accumulators of the item: keys × dld.
    dk: Vec<f32>,
    dv: Vec<f32>,
    /// S then P, and dP then dS: rows × T_LD.
    s: Vec<f32>,
    dp: Vec<f32>,
    /// Per row of the block, its visible keys within the tile (tile-relative), `(0, 0)`
    /// for a row that contributes nothing.
    ranges: Vec<(usize, usize)>,
    /// One input row in f32.
    row: Vec<f32>,
}

/// A pointer shared across rayon tasks that write disjoint ranges.
#[derive(Clone, Copy)]
struct SharedOut<T>(*mut T);
// SAFETY: only used to write disjoint ranges of one buffer from several threads.
unsafe impl<T> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedOut<T> {}
impl<T> SharedOut<T> {
    fn ptr(self) -> *mut T {
        self.0
    }
}

/// One sequence of a backward call: one batch entry of a dense call, or one sequence of a
/// packed one. Its q rows are rows `q_row0..q_row0 + p.seq_q` of the call's `(rows, heads,
/// d)` q, out, dO and dq; its keys rows `k_row0..` of dk and dv.
struct SeqIn<'a, T> {
    p: Problem,
    q: Input<'a, T>,
    o: Input<'a, T>,
    d_o: Input<'a, T>,
    k: Input<'a, T>,
    v: Input<'a, T>,
    alibi: Option<&'a [f32]>,
    q_row0: usize,
    k_row0: usize,
    /// The LSE of row `i`, head `h` is `lse[lse0 + h·lse_head + i]`.
    lse0: usize,
    lse_head: usize,
}

/// Items, at least, that a sequence's work is cut into (fewer only when it has fewer key
/// tiles): a constant, not the thread count, so that the cut, and with it every rounding,
/// is the same on any pool.
const MIN_ITEMS: usize = 8;

/// The key tiles of one sequence and their chunks: a chunk is a run of tiles that one item
/// walks in order, adding into one dQ buffer of its own.
struct Plan {
    keys: usize,
    /// Chunk `c` holds tiles `bounds[c]..bounds[c + 1]`.
    bounds: Vec<usize>,
}

/// Cuts a sequence of `p.seq_k` keys into tiles and chunks. `batch` is the number of
/// sequences the decision sees (a dense call's batch; 1 for each sequence of a packed call,
/// decided as a dense call on it alone). Tiles shrink from KEYS_PER_ITEM (down to
/// MIN_KEYS_PER_ITEM) until the call's kv heads have [`MIN_ITEMS`] tiles; each kv head's
/// tiles then form `⌈MIN_ITEMS / (batch × kv heads)⌉` chunks of about equal work (visible
/// query rows × keys), so that a causal mask does not leave one chunk most of the work.
fn plan(p: &Problem, batch: usize) -> Plan {
    let (sq, sk) = (p.seq_q, p.seq_k);
    let groups = batch * p.kv_heads;
    let mut keys = KEYS_PER_ITEM;
    while keys > MIN_KEYS_PER_ITEM && groups * sk.div_ceil(keys) < MIN_ITEMS {
        keys /= 2;
    }
    let n_tiles = sk.div_ceil(keys);
    let n_chunks = MIN_ITEMS.div_ceil(groups.max(1)).min(n_tiles).max(1);
    if n_chunks == 1 {
        return Plan { keys, bounds: vec![0, n_tiles] };
    }
    let work: Vec<usize> = (0..n_tiles)
        .map(|t| {
            let (j0, j1) = (t * keys, ((t + 1) * keys).min(sk));
            let i_start = partition_point(sq, |i| p.key_range(i).1 <= j0);
            let i_end = partition_point(sq, |i| p.key_range(i).0 < j1);
            (i_end.saturating_sub(i_start) + 1) * (j1 - j0)
        })
        .collect();
    let total: usize = work.iter().sum();
    let mut bounds = vec![0];
    let mut before = 0;
    for (t, &w) in work.iter().enumerate() {
        // The chunk of tile t: where its middle falls in the cumulative work.
        let chunk = ((2 * before + w) * n_chunks) / (2 * total);
        while bounds.len() <= chunk {
            if bounds.last() != Some(&t) {
                bounds.push(t);
            } else {
                break;
            }
        }
        before += w;
    }
    bounds.push(n_tiles);
    Plan { keys, bounds }
}

#[allow(clippy::too_many_arguments)]
fn run<T: Element>(
    p: &Problem,
    q: (&[T], Strides),
    k: (&[T], Strides),
    v: (&[T], Strides),
    o: (&[T], Strides),
    d_o: (&[T], Strides),
    lse: &[f32],
    alibi: Option<&[f32]>,
    isa: Isa,
) -> Result<(Vec<T>, Vec<T>, Vec<T>)> {
    let (h, hkv, d) = (p.heads, p.kv_heads, p.head_dim);
    let slopes = |b: usize| alibi.map(|a| &a[b * h..][..h]);
    let (rows_q, rows_k, batch) = match p.packed() {
        None => (p.batch * p.seq_q, p.batch * p.seq_k, p.batch),
        Some(pk) => (pk.total_q(), pk.cu_k[pk.batch()], 1),
    };
    let mut dq = vec![T::zero(); rows_q * h * d];
    let mut dk = vec![T::zero(); rows_k * hkv * d];
    let mut dv = vec![T::zero(); rows_k * hkv * d];
    if dq.is_empty() || dk.is_empty() {
        return Ok((dq, dk, dv));
    }
    let seqs: Vec<SeqIn<'_, T>> = match p.packed() {
        None => {
            // Dense: batch entry b as a sequence, reached through the batch stride.
            let dims_q = (p.batch, p.seq_q, h);
            let dims_k = (p.batch, p.seq_k, hkv);
            let (qi, oi) = (Input::new(q, dims_q, d, "q")?, Input::new(o, dims_q, d, "out")?);
            let doi = Input::new(d_o, dims_q, d, "out gradient")?;
            let (ki, vi) = (Input::new(k, dims_k, d, "k")?, Input::new(v, dims_k, d, "v")?);
            let one = Problem { batch: 1, ..p.clone() };
            (0..p.batch)
                .map(|b| SeqIn {
                    p: one.clone(),
                    q: qi.shifted(b, 0),
                    o: oi.shifted(b, 0),
                    d_o: doi.shifted(b, 0),
                    k: ki.shifted(b, 0),
                    v: vi.shifted(b, 0),
                    alibi: slopes(b),
                    q_row0: b * p.seq_q,
                    k_row0: b * p.seq_k,
                    lse0: b * h * p.seq_q,
                    lse_head: p.seq_q,
                })
                .collect()
        }
        Some(pk) => {
            let (qi, oi) = (Input::new(q, (1, rows_q, h), d, "q")?, Input::new(o, (1, rows_q, h), d, "out")?);
            let doi = Input::new(d_o, (1, rows_q, h), d, "out gradient")?;
            let (ki, vi) = (Input::new(k, (1, rows_k, hkv), d, "k")?, Input::new(v, (1, rows_k, hkv), d, "v")?);
            (0..pk.batch())
                .filter(|&b| pk.len_q(b) > 0)
                .map(|b| SeqIn {
                    p: p.sequence(b),
                    q: qi.shifted(0, pk.cu_q[b]),
                    o: oi.shifted(0, pk.cu_q[b]),
                    d_o: doi.shifted(0, pk.cu_q[b]),
                    k: ki.shifted(0, pk.cu_k[b]),
                    v: vi.shifted(0, pk.cu_k[b]),
                    alibi: slopes(b),
                    q_row0: pk.cu_q[b],
                    k_row0: pk.cu_k[b],
                    lse0: pk.cu_q[b],
                    lse_head: rows_q,
                })
                .collect()
        }
    };
    let g = p.group_size();
    let dp = d.next_multiple_of(D_ALIGN);
    let dld = padded_stride(dp);

    // Q and dO in f32 in row order, D = rowsum(dO ∘ O), lse in base 2, finiteness flags:
    // one pass, a position (g rows) at a time. Sequence s's rows start at row q_row0·h.
    let n_rows = rows_q * h;
    let (mut qf, mut dof) = (vec![0f32; n_rows * dld], vec![0f32; n_rows * dld]);
    let (mut lse2, mut delta, mut bad) = (vec![0f32; n_rows], vec![0f32; n_rows], vec![0u8; n_rows]);
    let seq_of = |row: usize| seqs.partition_point(|s| s.q_row0 <= row) - 1;
    qf.par_chunks_mut(g * dld)
        .zip(dof.par_chunks_mut(g * dld))
        .zip(lse2.par_chunks_mut(g).zip(delta.par_chunks_mut(g)).zip(bad.par_chunks_mut(g)))
        .enumerate()
        .for_each_init(
            || vec![0f32; d],
            |orow, (pos, ((qf, dof), ((lse2, delta), bad)))| {
                // pos = (q_row0 of the sequence)·hkv + kvh·sq + i
                let s = &seqs[seq_of(pos / hkv)];
                let (sq, local) = (s.p.seq_q, pos - s.q_row0 * hkv);
                let (kvh, i) = (local / sq, local % sq);
                for hh in 0..g {
                    let hq = kvh * g + hh;
                    let (qrow, dorow) = (&mut qf[hh * dld..][..d], &mut dof[hh * dld..][..d]);
                    T::to_f32(s.q.row(0, i, hq, d), qrow);
                    T::to_f32(s.d_o.row(0, i, hq, d), dorow);
                    T::to_f32(s.o.row(0, i, hq, d), orow);
                    delta[hh] = dot(dorow, orow);
                    lse2[hh] = lse[s.lse0 + hq * s.lse_head + i] * LOG2_E;
                    bad[hh] = u8::from(!all_finite(qrow)) | (u8::from(!all_finite(dorow)) << 1);
                }
            },
        );

    let ctxs: Vec<Ctx<'_, T>> = seqs
        .iter()
        .map(|s| {
            let (r0, n) = (s.q_row0 * h, s.p.seq_q * h);
            Ctx {
                p: s.p.clone(),
                k: s.k,
                v: s.v,
                q: &qf[r0 * dld..][..n * dld],
                d_o: &dof[r0 * dld..][..n * dld],
                lse2: &lse2[r0..][..n],
                delta: &delta[r0..][..n],
                bad: &bad[r0..][..n],
                alibi: s.alibi,
                q_block: (ROWS_PER_BLOCK / g).max(1),
                dp,
                dld,
            }
        })
        .collect();
    // The items: (sequence, kv head, chunk), in that order; a sequence without keys has none.
    let plans: Vec<Plan> = ctxs.iter().map(|c| plan(&c.p, batch)).collect();
    let mut first_item = Vec::with_capacity(ctxs.len());
    let mut items = Vec::new();
    for (si, (c, pl)) in ctxs.iter().zip(&plans).enumerate() {
        first_item.push(items.len());
        if c.p.seq_k == 0 {
            continue;
        }
        for kvh in 0..hkv {
            for ch in pl.bounds.windows(2) {
                items.push((si, kvh, ch[0], ch[1]));
            }
        }
    }
    let (dk_out, dv_out) = (SharedOut(dk.as_mut_ptr()), SharedOut(dv.as_mut_ptr()));
    let item_fn = select_item::<T>(isa);

    // Each item walks its tiles in order and adds their dQ contributions into a buffer of
    // its own (a row of dld per row of its (sequence, kv head) group, in row order).
    let dq_bufs: Vec<Vec<f32>> = items
        .par_iter()
        .map_init(Scratch::default, |sc, &(si, kvh, t0, t1)| {
            let (ctx, seq, keys) = (&ctxs[si], &seqs[si], plans[si].keys);
            let sk = ctx.p.seq_k;
            let mut dq_buf = vec![0f32; ctx.p.seq_q * g * dld];
            for tile in t0..t1 {
                let j0 = tile * keys;
                let item = Item { kvh, j0, j1: (j0 + keys).min(sk) };
                // SAFETY: k and v passed `Input::new`; `item_fn` was chosen for an
                // instruction set this CPU has; dq_buf holds a row of dld per row of the group.
                unsafe { item_fn(ctx, &item, sc, &mut dq_buf) };
                for jj in 0..item.j1 - item.j0 {
                    let start = ((seq.k_row0 + j0 + jj) * hkv + kvh) * d;
                    // SAFETY: items partition the (sequence, key, kv head) rows of dk and dv,
                    // and sequences own disjoint rows, so this in-bounds range is written by
                    // this item only; dk and dv outlive the parallel loop.
                    let (dk_row, dv_row) = unsafe {
                        (
                            std::slice::from_raw_parts_mut(dk_out.ptr().add(start), d),
                            std::slice::from_raw_parts_mut(dv_out.ptr().add(start), d),
                        )
                    };
                    T::from_f32(&sc.dk[jj * dld..][..d], dk_row);
                    T::from_f32(&sc.dv[jj * dld..][..d], dv_row);
                }
            }
            dq_buf
        })
        .collect();

    // dq = the sum of each group's chunk buffers in chunk order, one position (h rows) at a
    // time; rows of sequences without keys stay zero.
    dq.par_chunks_mut(h * d).enumerate().for_each_init(
        || vec![0f32; d],
        |acc, (pos, dst)| {
            let si = seq_of(pos);
            if ctxs[si].p.seq_k == 0 {
                return;
            }
            let i = pos - seqs[si].q_row0;
            let n_chunks = plans[si].bounds.len() - 1;
            for (hq, dst) in dst.chunks_exact_mut(d).enumerate() {
                let first = first_item[si] + (hq / g) * n_chunks;
                let (group, row) = (&dq_bufs[first..][..n_chunks], (i * g + hq % g) * dld);
                acc.copy_from_slice(&group[0][row..][..d]);
                for buf in &group[1..] {
                    acc.iter_mut().zip(&buf[row..][..d]).for_each(|(a, x)| *a += x);
                }
                T::from_f32(acc, dst);
            }
        },
    );
    Ok((dq, dk, dv))
}

/// One tile of an item: keys `j0..j1` of kv head `kvh`, against every query row of the q
/// heads of that kv head that sees one of them.
#[derive(Clone, Copy, Debug)]
struct Item {
    kvh: usize,
    j0: usize,
    j1: usize,
}

type ItemFn<T> = unsafe fn(&Ctx<'_, T>, &Item, &mut Scratch, &mut [f32]);

const PORTABLE: u8 = 0;
const AVX2: u8 = 1;
const AVX512: u8 = 2;

fn select_item<T: Element>(isa: Isa) -> ItemFn<T> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => item_avx512::<T>,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => item_avx2::<T>,
        _ => item_portable::<T>,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn item_avx512<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch, dq: &mut [f32]) {
    // SAFETY: `process_item`'s contract is the caller's; the features were detected.
    unsafe { process_item::<T, AVX512>(ctx, it, sc, dq) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn item_avx2<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch, dq: &mut [f32]) {
    // SAFETY: `process_item`'s contract is the caller's; the features were detected.
    unsafe { process_item::<T, AVX2>(ctx, it, sc, dq) }
}

unsafe fn item_portable<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch, dq: &mut [f32]) {
    // SAFETY: `process_item`'s contract is the caller's.
    unsafe { process_item::<T, PORTABLE>(ctx, it, sc, dq) }
}

/// The first `i` in `0..n` where `pred(i)` is false, for a `pred` that is true then false.
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Runs one item: leaves its dK and dV (keys × dld, f32, scaled) in `sc.dk` / `sc.dv`
/// and adds its dQ contributions into `dq` (a row of `dld` per row of the item's
/// (batch, kv head) group, in row order).
///
/// # Safety
/// The CPU has the instruction set of `ISA` (AVX512: AVX-512F, AVX2, FMA; AVX2: AVX2, FMA).
#[inline(always)]
unsafe fn process_item<T: Element, const ISA: u8>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch, dq: &mut [f32]) {
    let p = &ctx.p;
    let (d, dp, dld, g, sq) = (p.head_dim, ctx.dp, ctx.dld, p.group_size(), p.seq_q);
    let (j0, jb) = (it.j0, it.j1 - it.j0);
    let jpad = jb.next_multiple_of(16);
    assert!(dq.len() == sq * g * dld && jb <= T_LD && dp <= dld);

    // The K tile (row-major, for dQ += dS K), Kᵀ and Vᵀ (for S = Q Kᵀ, dP = dO Vᵀ), in
    // f32 with zeros in every padding row and column.
    sc.k.clear();
    sc.k.resize(jb * dld, 0.0);
    sc.kt.clear();
    sc.kt.resize(dp * T_LD, 0.0);
    sc.vt.clear();
    sc.vt.resize(dp * T_LD, 0.0);
    sc.row.resize(d, 0.0);
    for jj in 0..jb {
        let krow = &mut sc.k[jj * dld..][..d];
        T::to_f32(ctx.k.row(0, j0 + jj, it.kvh, d), krow);
        for (t, &x) in krow.iter().enumerate() {
            sc.kt[t * T_LD + jj] = x;
        }
        T::to_f32(ctx.v.row(0, j0 + jj, it.kvh, d), &mut sc.row);
        for (t, &x) in sc.row.iter().enumerate() {
            sc.vt[t * T_LD + jj] = x;
        }
    }
    let k_finite = all_finite(&sc.k);
    sc.dk.clear();
    sc.dk.resize(jb * dld, 0.0);
    sc.dv.clear();
    sc.dv.resize(jb * dld, 0.0);

    // Key ranges are monotone in the row: the rows that see a key of the tile are those
    // with hi > j0 and lo < j1, a contiguous run.
    let i_start = partition_point(sq, |i| p.key_range(i).1 <= j0);
    let i_end = partition_point(sq, |i| p.key_range(i).0 < it.j1);
    let (scale, softcap) = (p.scale, p.softcap);
    // Scores in base 2: s2 = log2(e)·s. With a softcap c, s = c·tanh(scale·<q,k> / c).
    let q_scale = if softcap > 0.0 { scale / softcap } else { scale * LOG2_E };
    let cap2 = softcap * LOG2_E;

    for i0 in (i_start..i_end).step_by(ctx.q_block) {
        let nq = ctx.q_block.min(i_end - i0);
        let rows = nq * g;
        // The block's rows: positions i0..i0 + nq × the group's heads, consecutive.
        let r0 = (it.kvh * sq + i0) * g;
        let (q, d_o) = (&ctx.q[r0 * dld..][..rows * dld], &ctx.d_o[r0 * dld..][..rows * dld]);
        let (lse2, delta, bad) = (&ctx.lse2[r0..][..rows], &ctx.delta[r0..][..rows], &ctx.bad[r0..][..rows]);
        sc.s.resize(rows * T_LD, 0.0);
        sc.dp.resize(rows * T_LD, 0.0);
        sc.ranges.resize(rows, (0, 0));
        // Whether every row sees every key of the tile: then no mask arithmetic.
        let mut full = true;
        for (r, range) in sc.ranges[..rows].iter_mut().enumerate() {
            let (a, e) = p.key_range(i0 + r / g);
            let (a, e) = (a.clamp(j0, it.j1) - j0, e.clamp(j0, it.j1) - j0);
            // A row whose scores were all -inf has lse = -inf: it contributes nothing.
            *range = if lse2[r] == f32::NEG_INFINITY || a >= e { (0, 0) } else { (a, e) };
            full &= *range == (0, jb);
        }

        // S = Q Kᵀ, dP = dO Vᵀ: rows × jpad.
        // SAFETY: the caller's ISA contract.
        unsafe {
            mm::<ISA>(rows, jpad, dp, q, dld, 1, &sc.kt, T_LD, &mut sc.s, T_LD, false);
            mm::<ISA>(rows, jpad, dp, d_o, dld, 1, &sc.vt, T_LD, &mut sc.dp, T_LD, false);
        }

        // S → P and dP → dS, row by row.
        for r in 0..rows {
            let (i, hq) = (i0 + r / g, it.kvh * g + r % g);
            let (srow, dprow) = (&mut sc.s[r * T_LD..][..jb], &mut sc.dp[r * T_LD..][..jb]);
            let (a, e) = sc.ranges[r];
            srow[..a].fill(0.0);
            srow[e..].fill(0.0);
            dprow[..a].fill(0.0);
            dprow[e..].fill(0.0);
            if a == e {
                continue;
            }
            let row = RowParams {
                q_scale,
                cap2,
                slope2: ctx.alibi.map_or(0.0, |s| s[hq] * LOG2_E),
                dist0: (p.diag(i) - (j0 + a) as i64) as f32,
                lse2: lse2[r],
                delta: delta[r],
                scale,
            };
            let (srow, dprow) = (&mut srow[a..e], &mut dprow[a..e]);
            match (softcap > 0.0, ctx.alibi.is_some()) {
                (false, false) => probs_row::<false, false>(srow, dprow, &row),
                (false, true) => probs_row::<false, true>(srow, dprow, &row),
                (true, false) => probs_row::<true, false>(srow, dprow, &row),
                (true, true) => probs_row::<true, true>(srow, dprow, &row),
            }
        }

        // dV += Pᵀ dO and dK += dSᵀ Q (jb × dp, over the block's rows), dQ += dS K
        // (rows × dp, over the tile's keys). On a partially visible tile, a non-finite
        // operand takes the per-row path that skips the masked (zero) coefficients.
        let dq = &mut dq[i0 * g * dld..][..rows * dld];
        let ranges = &sc.ranges[..rows];
        if !full && bad.iter().any(|&x| x & 2 != 0) {
            masked_rows_t(ranges, &sc.s, d_o, &mut sc.dv, dp, dld);
        } else {
            // SAFETY: the caller's ISA contract.
            unsafe { mm::<ISA>(jb, dp, rows, &sc.s, 1, T_LD, d_o, dld, &mut sc.dv, dld, true) };
        }
        if !full && bad.iter().any(|&x| x & 1 != 0) {
            masked_rows_t(ranges, &sc.dp, q, &mut sc.dk, dp, dld);
        } else {
            // SAFETY: the caller's ISA contract.
            unsafe { mm::<ISA>(jb, dp, rows, &sc.dp, 1, T_LD, q, dld, &mut sc.dk, dld, true) };
        }
        if !full && !k_finite {
            masked_rows(ranges, &sc.dp, &sc.k, dq, dp, dld);
        } else {
            // SAFETY: the caller's ISA contract.
            unsafe { mm::<ISA>(rows, dp, jb, &sc.dp, T_LD, 1, &sc.k, dld, dq, dld, true) };
        }
    }
}

/// What the elementwise pass needs of one row.
struct RowParams {
    /// Multiplies `<q, k>`: `scale·log2(e)`, or `scale / c` with a softcap.
    q_scale: f32,
    /// `c·log2(e)` with a softcap.
    cap2: f32,
    /// `slope·log2(e)` with ALiBi.
    slope2: f32,
    /// `diag(i) - j` for the first key of the slice.
    dist0: f32,
    /// `lse·log2(e)`.
    lse2: f32,
    /// `D_i`.
    delta: f32,
    scale: f32,
}

/// Turns the raw scores `<q, k>` of one row's visible keys into `P`, and `dP` into the
/// gradient of the raw scores, `scale · P (dP - D) · (1 - tanh²)`.
#[inline(always)]
fn probs_row<const SOFTCAP: bool, const ALIBI: bool>(s: &mut [f32], dp: &mut [f32], rp: &RowParams) {
    for (jj, (x, y)) in s.iter_mut().zip(dp.iter_mut()).enumerate() {
        let z = *x * rp.q_scale;
        let (mut s2, w) = if SOFTCAP {
            // tanh as the forward computes it (`tanh_f32`); its derivative 1 - tanh² as
            // 4e / (1 + e)² with e = e^(-2|z|), without the cancellation of 1 - t².
            let e = exp2_f32(-2.0 * LOG2_E * z.abs());
            let inv = 1.0 / (1.0 + e);
            (rp.cap2 * tanh_f32(z), 4.0 * e * inv * inv)
        } else {
            (z, 1.0)
        };
        if ALIBI {
            s2 -= rp.slope2 * (rp.dist0 - jj as f32).abs();
        }
        let pr = exp2_f32(s2 - rp.lse2);
        *x = pr;
        *y = pr * (*y - rp.delta) * (w * rp.scale);
    }
}

/// `c[j] += Σ_r a[r·T_LD + j] · b[r]` over the keys `j` each row `r` sees (`ranges`),
/// rows of `dp` at stride `dld`: `Pᵀ dO` or `dSᵀ Q` without the masked terms.
fn masked_rows_t(ranges: &[(usize, usize)], a: &[f32], b: &[f32], c: &mut [f32], dp: usize, dld: usize) {
    for (r, &(lo, hi)) in ranges.iter().enumerate() {
        let brow = &b[r * dld..][..dp];
        for j in lo..hi {
            let x = a[r * T_LD + j];
            c[j * dld..][..dp].iter_mut().zip(brow).for_each(|(c, &y)| *c += x * y);
        }
    }
}

/// `c[r·dld..] += Σ_j a[r·T_LD + j] · b[j·dld..]` over the keys `j` each row `r` sees:
/// `dS K` without the masked terms.
fn masked_rows(ranges: &[(usize, usize)], a: &[f32], b: &[f32], c: &mut [f32], dp: usize, dld: usize) {
    for (r, &(lo, hi)) in ranges.iter().enumerate() {
        let crow = &mut c[r * dld..][..dp];
        for j in lo..hi {
            let x = a[r * T_LD + j];
            crow.iter_mut().zip(&b[j * dld..][..dp]).for_each(|(c, &y)| *c += x * y);
        }
    }
}

#[inline(always)]
fn all_finite(x: &[f32]) -> bool {
    x.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// `<a, b>` with independent lanes, so that it vectorizes.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for ((l, &x), &y) in lanes.iter_mut().zip(x).zip(y) {
            *l += x * y;
        }
    }
    tail + lanes.iter().sum::<f32>()
}

/// `C = A·B` (or `C += A·B` with `accumulate`) for an `m × n` C, `n % 16 == 0`, with
/// `A[r][t] = a[r·ars + t·acs]`, `B[t][c] = b[t·ldb + c]`, `C[r][c] = c[r·ldc + c]`, in
/// the kernel of instruction set `ISA`. Bounds are checked here.
///
/// # Safety
/// The CPU has the instruction set of `ISA`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn mm<const ISA: u8>(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    ars: usize,
    acs: usize,
    b: &[f32],
    ldb: usize,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(n.is_multiple_of(16) && c.len() >= (m - 1) * ldc + n);
    assert!(k == 0 || (a.len() > (m - 1) * ars + (k - 1) * acs && b.len() >= (k - 1) * ldb + n));
    let (a, b, c) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    // SAFETY: the bounds were checked above; the ISA contract is the caller's.
    unsafe {
        match ISA {
            AVX512 => matmul::<12, 32, true>(m, n, k, a, ars, acs, b, ldb, c, ldc, accumulate),
            AVX2 => matmul::<6, 16, true>(m, n, k, a, ars, acs, b, ldb, c, ldc, accumulate),
            _ => matmul::<4, 8, false>(m, n, k, a, ars, acs, b, ldb, c, ldc, accumulate),
        }
    }
}

/// The register-blocked product of [`mm`]: `MR × NR` blocks of C (`NR` a multiple of 8
/// dividing 32, or 32 with a 16-wide last block), column blocks outer so that the
/// `k × NR` slice of B a block streams stays in L1 across the row blocks; the last rows
/// in blocks of 8, 4, 2, 1. Each block keeps C in `MR·NR` accumulators (vector registers
/// once compiled for the instruction set: 24 zmm at 12 × 32, 12 ymm at 6 × 16) and per
/// step of k loads one row of B and broadcasts one element of A per row.
///
/// # Safety
/// Every element the loops address lies inside the caller's buffers ([`mm`] checks).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn matmul<const MR: usize, const NR: usize, const FMA: bool>(
    m: usize,
    n: usize,
    k: usize,
    a: *const f32,
    ars: usize,
    acs: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let mut c0 = 0;
    while c0 < n {
        let wide = c0 + NR <= n;
        let mut r = 0;
        macro_rules! rows {
            ($r:expr) => {{
                // SAFETY: rows r..r + $r and columns c0..c0 + width are inside C; A and B
                // are addressed within rows r..r + $r and the same columns.
                unsafe {
                    let (a, c) = (a.add(r * ars), c.add(r * ldc + c0));
                    if wide {
                        block::<$r, NR, FMA>(k, a, ars, acs, b.add(c0), ldb, c, ldc, accumulate)
                    } else {
                        block::<$r, 16, FMA>(k, a, ars, acs, b.add(c0), ldb, c, ldc, accumulate)
                    }
                }
                r += $r;
            }};
        }
        while r + MR <= m {
            rows!(MR);
        }
        if MR > 8 && r + 8 <= m {
            rows!(8);
        }
        if MR > 4 && r + 4 <= m {
            rows!(4);
        }
        if MR > 2 && r + 2 <= m {
            rows!(2);
        }
        if r < m {
            rows!(1);
        }
        debug_assert_eq!(r, m);
        c0 += if wide { NR } else { 16 };
    }
}

/// One `R × C` block of [`matmul`].
///
/// # Safety
/// As [`matmul`], for `R` rows and `C` columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<const R: usize, const C: usize, const FMA: bool>(
    k: usize,
    a: *const f32,
    ars: usize,
    acs: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let mut acc = [[0f32; C]; R];
    // SAFETY (whole body): the caller's bounds.
    unsafe {
        if accumulate {
            for (r, acc) in acc.iter_mut().enumerate() {
                *acc = std::ptr::read_unaligned(c.add(r * ldc) as *const [f32; C]);
            }
        }
        for t in 0..k {
            let bt = std::ptr::read_unaligned(b.add(t * ldb) as *const [f32; C]);
            let at = a.add(t * acs);
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = *at.add(r * ars);
                for (acc, &y) in acc.iter_mut().zip(&bt) {
                    *acc = if FMA { x.mul_add(y, *acc) } else { *acc + x * y };
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            std::ptr::write_unaligned(c.add(r * ldc) as *mut [f32; C], *acc);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Gradients against an independent f64 analytic backward (materialized S and P per
    //! head), with the tolerance relative to what the naive computation achieves in the
    //! same dtype (the same materialized math in f32, rounding wherever candle's naive
    //! path under autograd holds a tensor of the input dtype), plus a derived floor.

    use super::*;
    use crate::problem::SeqLayout;
    use candle_core::{DType, WithDType};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// f32 or f64, for the reference computations.
    trait Real:
        Copy
        + PartialOrd
        + std::ops::Add<Output = Self>
        + std::ops::Sub<Output = Self>
        + std::ops::Mul<Output = Self>
        + std::ops::Div<Output = Self>
        + std::ops::AddAssign
    {
        fn of(x: f64) -> Self;
        fn f64(self) -> f64;
        fn exp(self) -> Self;
        fn ln(self) -> Self;
        fn tanh(self) -> Self;
    }
    macro_rules! real {
        ($t:ty) => {
            impl Real for $t {
                fn of(x: f64) -> Self {
                    x as $t
                }
                fn f64(self) -> f64 {
                    self as f64
                }
                fn exp(self) -> Self {
                    <$t>::exp(self)
                }
                fn ln(self) -> Self {
                    <$t>::ln(self)
                }
                fn tanh(self) -> Self {
                    <$t>::tanh(self)
                }
            }
        };
    }
    real!(f32);
    real!(f64);

    /// Logical `(b, s, h, d)` contiguous values of q, k, v and dO (exact in the dtype).
    #[derive(Clone)]
    struct Inputs {
        q: Vec<f64>,
        k: Vec<f64>,
        v: Vec<f64>,
        d_o: Vec<f64>,
    }

    /// Magnitudes the tolerance floor needs (from the f64 run).
    #[derive(Default, Debug, Clone, Copy)]
    struct Stats {
        /// Largest |s| and |lse| over visible scores / non-empty rows.
        max_s: f64,
        max_lse: f64,
        /// Largest `Σ_i P_ij` over the rows of a kv head's group.
        colsum: f64,
        /// Largest `|dP_ij - D_i|` over visible scores.
        max_dpd: f64,
        /// Largest `Σ_c |dO_ic O_ic|`, and row norms of dO, V and O.
        max_do_o: f64,
        norm_do: f64,
        norm_v: f64,
        norm_o: f64,
    }

    struct Reference {
        o: Vec<f64>,
        lse: Vec<f64>,
        dq: Vec<f64>,
        dk: Vec<f64>,
        dv: Vec<f64>,
        stats: Stats,
    }

    fn max_abs(x: &[f64]) -> f64 {
        x.iter().fold(0.0, |m, v| m.max(v.abs()))
    }

    fn row_norms_max(x: &[f64], d: usize) -> f64 {
        x.chunks_exact(d).map(|r| r.iter().map(|v| v * v).sum::<f64>().sqrt()).fold(0.0, f64::max)
    }

    /// The forward (o, lse) and the gradients for `L = Σ dO·O`, materializing each row's
    /// scores, in `F`; `rnd` rounds every value that the naive candle path under autograd
    /// holds in the input dtype (matmul outputs, P before `P V`, dS before its matmuls).
    /// With `F = f64` and no rounding this is the oracle.
    fn reference<F: Real>(p: &Problem, alibi: Option<&[f32]>, x: &Inputs, rnd: &dyn Fn(F) -> F) -> Reference {
        let (nb, sq, sk, h, hkv, d) = (p.batch, p.seq_q, p.seq_k, p.heads, p.kv_heads, p.head_dim);
        let g = h / hkv;
        let cv = |v: &[f64]| v.iter().map(|&x| F::of(x)).collect::<Vec<F>>();
        let (q, k, v, d_o) = (cv(&x.q), cv(&x.k), cv(&x.v), cv(&x.d_o));
        let zero = F::of(0.0);
        let qx = |b: usize, i: usize, hq: usize| ((b * sq + i) * h + hq) * d;
        let kx = |b: usize, j: usize, kh: usize| ((b * sk + j) * hkv + kh) * d;
        let mut o = vec![0f64; nb * sq * h * d];
        let mut lse = vec![f64::NEG_INFINITY; nb * h * sq];
        let mut dq = vec![0f64; nb * sq * h * d];
        let mut dk = vec![zero; nb * sk * hkv * d];
        let mut dv = vec![zero; nb * sk * hkv * d];
        let mut st = Stats::default();
        let (scale, cap) = (F::of(p.scale as f64), F::of(p.softcap as f64));
        for b in 0..nb {
            for kh in 0..hkv {
                let mut colsum = vec![0f64; sk];
                for hq in kh * g..(kh + 1) * g {
                    let slope = alibi.map_or(0.0, |a| a[b * h + hq] as f64);
                    let mut dk_h = vec![zero; sk * d];
                    let mut dv_h = vec![zero; sk * d];
                    for i in 0..sq {
                        let (lo, hi) = p.key_range(i);
                        if lo >= hi {
                            continue;
                        }
                        let qi = &q[qx(b, i, hq)..][..d];
                        let doi = &d_o[qx(b, i, hq)..][..d];
                        let mut s = Vec::with_capacity(hi - lo);
                        let mut w = Vec::with_capacity(hi - lo);
                        for j in lo..hi {
                            let kj = &k[kx(b, j, kh)..][..d];
                            let mut raw = zero;
                            for c in 0..d {
                                raw += qi[c] * kj[c];
                            }
                            let z = rnd(raw) * scale;
                            let (s1, wj) = if p.softcap > 0.0 {
                                let t = (z / cap).tanh();
                                (cap * t, F::of(1.0) - t * t)
                            } else {
                                (z, F::of(1.0))
                            };
                            s.push(s1 - F::of(slope * (p.diag(i) - j as i64).unsigned_abs() as f64));
                            w.push(wj);
                        }
                        let m = s.iter().fold(F::of(f64::NEG_INFINITY), |m, &x| if x > m { x } else { m });
                        let m = if m.f64() == f64::NEG_INFINITY { zero } else { m };
                        let mut sum = zero;
                        for &x in &s {
                            sum += (x - m).exp();
                        }
                        let l = m + sum.ln();
                        lse[(b * h + hq) * sq + i] = l.f64();
                        let prob: Vec<F> = s.iter().map(|&x| (x - m).exp() / sum).collect();
                        let mut oi = vec![zero; d];
                        let mut dpv = Vec::with_capacity(hi - lo);
                        for (jj, j) in (lo..hi).enumerate() {
                            let vj = &v[kx(b, j, kh)..][..d];
                            let pt = rnd(prob[jj]);
                            let mut dpj = zero;
                            for c in 0..d {
                                oi[c] += pt * vj[c];
                                dpj += doi[c] * vj[c];
                                dv_h[j * d + c] += pt * doi[c];
                            }
                            dpv.push(rnd(dpj));
                        }
                        for c in 0..d {
                            o[qx(b, i, hq) + c] = rnd(oi[c]).f64();
                        }
                        let mut delta = zero;
                        for (jj, &dpj) in dpv.iter().enumerate() {
                            delta += prob[jj] * dpj;
                        }
                        let mut dqi = vec![zero; d];
                        for (jj, j) in (lo..hi).enumerate() {
                            let ds = rnd(prob[jj] * (dpv[jj] - delta) * w[jj] * scale);
                            let kj = &k[kx(b, j, kh)..][..d];
                            for c in 0..d {
                                dqi[c] += ds * kj[c];
                                dk_h[j * d + c] += ds * qi[c];
                            }
                            colsum[j] += prob[jj].f64();
                            st.max_s = st.max_s.max(s[jj].f64().abs());
                            st.max_dpd = st.max_dpd.max((dpv[jj] - delta).f64().abs());
                        }
                        st.max_lse = st.max_lse.max(l.f64().abs());
                        for c in 0..d {
                            dq[qx(b, i, hq) + c] = rnd(dqi[c]).f64();
                        }
                    }
                    for j in 0..sk {
                        for c in 0..d {
                            dk[kx(b, j, kh) + c] += rnd(dk_h[j * d + c]);
                            dv[kx(b, j, kh) + c] += rnd(dv_h[j * d + c]);
                        }
                    }
                }
                st.colsum = colsum.iter().fold(st.colsum, |a, &c| a.max(c));
            }
        }
        let dk = dk.into_iter().map(|x| rnd(x).f64()).collect();
        let dv = dv.into_iter().map(|x| rnd(x).f64()).collect();
        st.max_do_o = x
            .d_o
            .chunks_exact(d)
            .zip(o.chunks_exact(d))
            .fold(0.0, |m, (a, b)| m.max(a.iter().zip(b).map(|(x, y)| (x * y).abs()).sum::<f64>()));
        st.norm_do = row_norms_max(&x.d_o, d);
        st.norm_v = row_norms_max(&x.v, d);
        st.norm_o = row_norms_max(&o, d);
        Reference { o, lse, dq, dk, dv, stats: st }
    }

    fn eps(dtype: DType) -> f64 {
        match dtype {
            DType::F32 => f32::EPSILON as f64,
            DType::F16 => f16::EPSILON.to_f64(),
            DType::BF16 => bf16::EPSILON.to_f64(),
            _ => unreachable!(),
        }
    }

    /// `x` rounded to `dtype` (through f32, as candle converts).
    fn round_to(dtype: DType, x: f64) -> f64 {
        let x = x as f32;
        match dtype {
            DType::F32 => x as f64,
            DType::F16 => f16::from_f32(x).to_f64(),
            DType::BF16 => bf16::from_f32(x).to_f64(),
            _ => unreachable!(),
        }
    }

    /// The absolute error floors of dq, dk and dv added to 2 × the naive error, derived
    /// from the error sources of the fused result that the naive one does not share or
    /// can escape by luck (with `u = 2^-24`):
    /// * the final rounding to the dtype: `eps(dtype)/2 · max|grad|`;
    /// * P's relative error `ρ`: the `2^x` polynomial (2 ulp: `2·eps(f32)`), the f32 lse
    ///   input and the base-2 arguments `s·log2 e - lse·log2 e` (`3u(|s| + |lse|)`). It
    ///   moves dV_j by `ρ Σ_i P_ij |dO_i|` and dS_ij by `ρ P_ij |dP_ij - D_i|`;
    /// * D taken as `dO·O` from O rounded to the dtype, in another summation order than
    ///   dP (the naive path's `Σ_j P dP` has neither): `eps(dtype)/2 · Σ_c|dO_c O_c|`
    ///   plus, in the probabilistic rounding model used for the forward's floor,
    ///   `sqrt(d)·u·‖dO‖(‖V‖ + ‖O‖)`;
    /// * a dS error moves dQ_i by `|scale| Σ_j P_ij |K_j| ≤ |scale| max|K|` times it and
    ///   dK_j by `|scale| Σ_i P_ij |Q_i|` times it, `Σ_i P_ij` at most the largest column
    ///   sum of P over a kv head's group.
    fn floors(dtype: DType, p: &Problem, x: &Inputs, r: &Reference) -> [f64; 3] {
        let st = &r.stats;
        let u = f32::EPSILON as f64 / 2.0;
        let rho = 2.0 * f32::EPSILON as f64 + 3.0 * u * (st.max_s + st.max_lse);
        let eps_d =
            eps(dtype) / 2.0 * st.max_do_o + (p.head_dim as f64).sqrt() * u * st.norm_do * (st.norm_v + st.norm_o);
        let e_ds = rho * st.max_dpd + eps_d;
        let scale = (p.scale as f64).abs();
        let half = eps(dtype) / 2.0;
        [
            half * max_abs(&r.dq) + scale * max_abs(&x.k) * e_ds,
            half * max_abs(&r.dk) + scale * max_abs(&x.q) * st.colsum * e_ds,
            half * max_abs(&r.dv) + rho * st.colsum * max_abs(&x.d_o),
        ]
    }

    /// How a `(b, s, h, d)` input is laid out in its storage.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Lay {
        Contiguous,
        /// Stored `(b, h, s, d)`, viewed through a transpose.
        HeadsMajor,
        /// A narrow of a larger `(b, s + 3, h + 2, d + 5)` buffer (offset, padded rows).
        Narrowed,
    }

    /// The storage and layout of `vals` (logical `(b, s, h, d)`) in dtype `T`; elements
    /// outside the view are NaN, so that a read outside it shows.
    fn store<T: WithDType>(vals: &[f64], dims: (usize, usize, usize, usize), lay: Lay) -> (CpuStorage, Layout) {
        let (b, s, h, d) = dims;
        let layout = match lay {
            Lay::Contiguous => Layout::contiguous((b, s, h, d)),
            Lay::HeadsMajor => Layout::contiguous((b, h, s, d)).transpose(1, 2).unwrap(),
            Lay::Narrowed => Layout::contiguous((b, s + 3, h + 2, d + 5))
                .narrow(1, 2, s)
                .and_then(|l| l.narrow(2, 1, h))
                .and_then(|l| l.narrow(3, 4, d))
                .unwrap(),
        };
        let n = match lay {
            Lay::Narrowed => b * (s + 3) * (h + 2) * (d + 5),
            _ => b * s * h * d,
        };
        let mut data = vec![T::from_f64(f64::NAN); n];
        let st = layout.stride();
        for bi in 0..b {
            for si in 0..s {
                for hi in 0..h {
                    for c in 0..d {
                        let at = layout.start_offset() + bi * st[0] + si * st[1] + hi * st[2] + c * st[3];
                        data[at] = T::from_f64(vals[((bi * s + si) * h + hi) * d + c]);
                    }
                }
            }
        }
        (T::to_cpu_storage_owned(data), layout)
    }

    fn to_f64(s: &CpuStorage) -> Vec<f64> {
        match s {
            CpuStorage::F32(x) => x.iter().map(|&v| v as f64).collect(),
            CpuStorage::F16(x) => x.iter().map(|v| v.to_f64()).collect(),
            CpuStorage::BF16(x) => x.iter().map(|v| v.to_f64()).collect(),
            _ => unreachable!(),
        }
    }

    #[derive(Clone, Debug)]
    struct Case {
        p: Problem,
        alibi: Option<Vec<f32>>,
        lays: [Lay; 5],
        isa: Isa,
    }

    fn problem(
        (batch, seq_q, seq_k, heads, kv_heads, head_dim): (usize, usize, usize, usize, usize, usize),
        scale: f32,
        softcap: f32,
        (window_left, window_right): (i64, i64),
        has_alibi: bool,
    ) -> Problem {
        Problem {
            batch,
            seq_q,
            seq_k,
            heads,
            kv_heads,
            head_dim,
            scale,
            softcap,
            window_left,
            window_right,
            has_alibi,
            layout: SeqLayout::Dense,
            want_lse: false,
            mm_ranges: None,
        }
    }

    fn randn(rng: &mut StdRng, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random::<f64>();
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect()
    }

    fn random_inputs(rng: &mut StdRng, p: &Problem, dtype: DType) -> Inputs {
        let (nq, nk) = (p.batch * p.seq_q * p.heads * p.head_dim, p.batch * p.seq_k * p.kv_heads * p.head_dim);
        let mut r = |n| randn(rng, n).into_iter().map(|x| round_to(dtype, x)).collect::<Vec<f64>>();
        Inputs { q: r(nq), k: r(nk), v: r(nk), d_o: r(nq) }
    }

    const ISAS: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Portable];

    fn random_case(rng: &mut StdRng, index: usize) -> Case {
        const SEQS: [usize; 15] = [1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300];
        const DIMS: [usize; 16] = [1, 2, 7, 8, 16, 31, 40, 59, 64, 80, 96, 111, 128, 160, 200, 256];
        let seq = |rng: &mut StdRng| match rng.random_range(0..4) {
            0 | 1 => rng.random_range(1..=300),
            2 => rng.random_range(1..=20),
            _ => SEQS[rng.random_range(0..SEQS.len())],
        };
        let (mut sq, mut sk) = (seq(rng), seq(rng));
        let d = if rng.random_bool(0.6) { DIMS[rng.random_range(0..DIMS.len())] } else { rng.random_range(1..=256) };
        let (mut hkv, g) = match rng.random_range(0..5) {
            0 => (1, rng.random_range(2..=8)), // MQA
            1 => (rng.random_range(1..=3), 1),
            2 => (rng.random_range(1..=3), 2),
            3 => (rng.random_range(1..=2), 4),
            _ => (rng.random_range(1..=3), rng.random_range(1..=3)),
        };
        let mut b = rng.random_range(1..=2);
        // Bound the f64 reference's work.
        const MAX_WORK: usize = 3_000_000;
        while b * hkv * g * sq * sk * d > MAX_WORK {
            if b > 1 {
                b = 1;
            } else if hkv > 1 {
                hkv -= 1;
            } else if sq >= sk {
                sq = sq.div_ceil(2);
            } else {
                sk = sk.div_ceil(2);
            }
        }
        let h = hkv * g;
        let base = 1.0 / (d as f32).sqrt();
        let scale = match rng.random_range(0..10) {
            0 => 0.0,
            1 => -base * rng.random_range(0.2..2.0f32),
            2 => base * rng.random_range(2.0..4.0f32),
            _ => base * rng.random_range(0.3..1.5f32),
        };
        let window = |rng: &mut StdRng, n: usize| -> i64 {
            if rng.random_bool(0.5) {
                -1
            } else {
                rng.random_range(0..=n + 2) as i64
            }
        };
        let (left, right) = match rng.random_range(0..6) {
            0 | 1 => (-1, -1),
            2 => (-1, 0),                     // causal
            3 => (window(rng, sk).max(0), 0), // causal with a left window
            _ => (window(rng, sk), window(rng, sq)),
        };
        let softcap = if rng.random_bool(0.25) { rng.random_range(0.5..30.0f32) } else { 0.0 };
        let alibi =
            rng.random_bool(0.25).then(|| (0..b * h).map(|_| rng.random_range(0.0..0.3f32)).collect::<Vec<f32>>());
        let lays = std::array::from_fn(|_| match rng.random_range(0..4) {
            0 => Lay::HeadsMajor,
            1 => Lay::Narrowed,
            _ => Lay::Contiguous,
        });
        let isa = ISAS[index % 3];
        let isa = if isa.available() { isa } else { Isa::detect() };
        Case { p: problem((b, sq, sk, h, hkv, d), scale, softcap, (left, right), alibi.is_some()), alibi, lays, isa }
    }

    /// The fused gradients (as f64) for inputs `x` and the reference's o and lse, with
    /// `p_fused` (the tests of the tolerance pass a wrong one).
    fn fused<T: WithDType>(case: &Case, p_fused: &Problem, x: &Inputs, r: &Reference) -> [Vec<f64>; 3] {
        let p = &case.p;
        let qd = (p.batch, p.seq_q, p.heads, p.head_dim);
        let kd = (p.batch, p.seq_k, p.kv_heads, p.head_dim);
        let o: Vec<f64> = r.o.iter().map(|&v| T::from_f64(v).to_f64()).collect();
        let [lq, lk, lv, lo, ldo] = case.lays;
        let (q, k, v) = (store::<T>(&x.q, qd, lq), store::<T>(&x.k, kd, lk), store::<T>(&x.v, kd, lv));
        let (o, d_o) = (store::<T>(&o, qd, lo), store::<T>(&x.d_o, qd, ldo));
        let lse: Vec<f32> = r.lse.iter().map(|&v| v as f32).collect();
        let (dq, dk, dv) = backward_with(
            p_fused,
            (&q.0, &q.1),
            (&k.0, &k.1),
            (&v.0, &v.1),
            (&o.0, &o.1),
            (&d_o.0, &d_o.1),
            &lse,
            case.alibi.as_deref(),
            case.isa,
        )
        .unwrap();
        assert_eq!(dq.dtype(), T::DTYPE);
        [to_f64(&dq), to_f64(&dk), to_f64(&dv)]
    }

    fn max_err(a: &[f64], b: &[f64]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).fold(0.0, |m, (x, y)| if (x - y).is_nan() { f64::INFINITY } else { m.max((x - y).abs()) })
    }

    /// `(fused error, allowed error)` for dq, dk and dv.
    fn check_case<T: WithDType>(case: &Case, p_fused: &Problem, seed: u64) -> [(f64, f64); 3] {
        let dtype = T::DTYPE;
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
        let x = random_inputs(&mut rng, &case.p, dtype);
        let oracle = reference::<f64>(&case.p, case.alibi.as_deref(), &x, &|v| v);
        let round = move |v: f32| round_to(dtype, v as f64) as f32;
        let naive = reference::<f32>(&case.p, case.alibi.as_deref(), &x, &round);
        let got = fused::<T>(case, p_fused, &x, &oracle);
        let floor = floors(dtype, &case.p, &x, &oracle);
        let want = [&oracle.dq, &oracle.dk, &oracle.dv];
        let naive = [&naive.dq, &naive.dk, &naive.dv];
        std::array::from_fn(|i| (max_err(&got[i], want[i]), 2.0 * max_err(naive[i], want[i]) + floor[i]))
    }

    /// The features a case exercises, for the sweep's coverage count.
    fn features(c: &Case) -> Vec<&'static str> {
        let p = &c.p;
        let empty_rows = (0..p.seq_q).any(|i| {
            let (lo, hi) = p.key_range(i);
            lo >= hi
        });
        let g = p.heads / p.kv_heads;
        [
            (p.window_right == 0, "causal"),
            (p.window_left >= 0 && p.window_right != 0, "left window"),
            (p.window_right > 0, "right window"),
            (p.softcap > 0.0, "softcap"),
            (c.alibi.is_some(), "alibi"),
            (p.scale < 0.0, "negative scale"),
            (p.scale == 0.0, "zero scale"),
            (g == 1, "MHA"),
            (g == 2, "GQA 2"),
            (g == 4, "GQA 4"),
            (p.kv_heads == 1 && g > 1, "MQA"),
            (p.seq_q > p.seq_k, "sq > sk"),
            (p.seq_q < p.seq_k, "sq < sk"),
            (empty_rows, "rows without keys"),
            (!p.head_dim.is_multiple_of(2), "odd head dim"),
            (!p.head_dim.is_multiple_of(16), "head dim not a multiple of 16"),
            (p.head_dim > 128, "head dim > 128"),
            (p.seq_q > 128 && p.seq_k > 128, "sq and sk > 128"),
            (c.lays.contains(&Lay::HeadsMajor), "transposed input"),
            (c.lays.contains(&Lay::Narrowed), "narrowed input"),
            (c.isa == Isa::Avx512, "AVX-512 kernels"),
            (c.isa == Isa::Avx2, "AVX2 kernels"),
            (c.isa == Isa::Portable, "portable kernels"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    fn sweep<T: WithDType>(cases: usize, seed0: u64) {
        let mut failures = Vec::new();
        let mut worst = [0f64; 3];
        let mut coverage = std::collections::BTreeMap::<&str, usize>::new();
        for n in 0..cases {
            let seed = seed0 + n as u64;
            let case = random_case(&mut StdRng::seed_from_u64(seed), n);
            for f in features(&case) {
                *coverage.entry(f).or_default() += 1;
            }
            let res = check_case::<T>(&case, &case.p, seed);
            for (w, &(err, allowed)) in worst.iter_mut().zip(&res) {
                *w = w.max(err / allowed);
            }
            // A NaN error fails too.
            if res.iter().any(|&(err, allowed)| err.is_nan() || err > allowed) {
                failures.push(format!("seed {seed}: (err, allowed) dq/dk/dv {res:?}\n  {case:?}"));
            }
        }
        println!("{:?}: {cases} cases, worst error / allowed for dq, dk, dv: {worst:?}", T::DTYPE);
        println!("{:?} coverage: {coverage:?}", T::DTYPE);
        let expected = 23 - ISAS.iter().filter(|i| !i.available()).count();
        assert!(
            coverage.len() >= expected && coverage.values().all(|&n| n >= 5),
            "each feature needs at least 5 cases: {coverage:?}"
        );
        assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn sweep_f32() {
        sweep::<f32>(250, 1000);
    }

    #[test]
    fn sweep_f16() {
        sweep::<f16>(250, 2000);
    }

    #[test]
    fn sweep_bf16() {
        sweep::<bf16>(250, 3000);
    }

    /// Head dims past 256, up to 512, on every instruction set and dtype, causal and not,
    /// GQA, against the f64 oracle with the sweep's tolerance.
    #[test]
    fn head_dims_up_to_512() {
        let mut n = 0;
        for d in [264usize, 320, 500, 512] {
            for (isa, causal) in ISAS.into_iter().zip([true, false, true]) {
                if !isa.available() {
                    continue;
                }
                let window = if causal { (-1, 0) } else { (-1, -1) };
                let p = problem((1, 37, 150, 4, 2, d), 1.0 / (d as f32).sqrt(), 0.0, window, false);
                let case = Case { p, alibi: None, lays: [Lay::Contiguous; 5], isa };
                for (i, res) in [
                    check_case::<f32>(&case, &case.p, 7000 + n),
                    check_case::<f16>(&case, &case.p, 7100 + n),
                    check_case::<bf16>(&case, &case.p, 7200 + n),
                ]
                .into_iter()
                .enumerate()
                {
                    assert!(res.iter().all(|&(e, a)| e <= a), "d {d} {isa:?} dtype #{i}: {res:?}");
                }
                n += 1;
            }
        }
        assert!(n >= 4);
    }

    /// The tolerance is tight enough to see a 2% scale error in the gradients.
    #[test]
    fn tolerance_catches_a_scale_error() {
        for (n, seed) in (0..6).zip(4000..) {
            let case = random_case(&mut StdRng::seed_from_u64(seed), n);
            let mut case = case.clone();
            case.p.scale = 0.2;
            let wrong = Problem { scale: case.p.scale * 1.02, ..case.p.clone() };
            let res = check_case::<f32>(&case, &wrong, seed);
            assert!(res.iter().any(|&(e, a)| e > a), "a 2% scale error passed: {res:?} {case:?}");
            let res = check_case::<f32>(&case, &case.p, seed);
            assert!(res.iter().all(|&(e, a)| e <= a), "{res:?}");
        }
    }

    /// The f64 oracle's gradients against central differences of `L = Σ dO·O`.
    #[test]
    fn oracle_matches_finite_differences() {
        let configs = [
            // (b, sq, sk, h, hkv, d), scale, softcap, window, alibi
            ((1, 3, 5, 2, 1, 3), 0.7, 2.0, (-1, 0), true),
            ((2, 4, 2, 2, 2, 2), 0.9, 0.0, (0, 0), false), // sq > sk: rows with no key
            ((1, 2, 3, 4, 2, 1), -1.3, 0.0, (-1, -1), false),
            ((1, 3, 3, 1, 1, 4), 1.1, 0.8, (1, 1), true),
        ];
        for (n, (dims, scale, softcap, window, has_alibi)) in configs.into_iter().enumerate() {
            let p = problem(dims, scale, softcap, window, has_alibi);
            let mut rng = StdRng::seed_from_u64(500 + n as u64);
            let alibi: Option<Vec<f32>> =
                has_alibi.then(|| (0..p.batch * p.heads).map(|_| rng.random_range(0.1..0.6f32)).collect());
            let x = random_inputs(&mut rng, &p, DType::F32);
            let r = reference::<f64>(&p, alibi.as_deref(), &x, &|v| v);
            let loss = |x: &Inputs| -> f64 {
                let o = reference::<f64>(&p, alibi.as_deref(), x, &|v| v).o;
                o.iter().zip(&x.d_o).map(|(a, b)| a * b).sum()
            };
            let step = 1e-6;
            let mut worst = 0f64;
            for (which, grad) in [(0, &r.dq), (1, &r.dk), (2, &r.dv)] {
                for e in 0..grad.len() {
                    let bump = |delta: f64| {
                        let mut y = x.clone();
                        [&mut y.q, &mut y.k, &mut y.v][which][e] += delta;
                        loss(&y)
                    };
                    let fd = (bump(step) - bump(-step)) / (2.0 * step);
                    let err = (fd - grad[e]).abs();
                    worst = worst.max(err);
                    assert!(
                        err <= 1e-7 * (1.0 + grad[e].abs()),
                        "config {n}, input {which}, element {e}: {fd} vs {}",
                        grad[e]
                    );
                }
            }
            assert!(r.dq.iter().chain(&r.dk).chain(&r.dv).any(|v| v.abs() > 1e-3), "config {n}: trivial gradients");
            println!("config {n}: worst |fd - analytic| {worst:e}");
        }
    }

    /// NaN in one query row or one key reaches exactly the gradients that depend on it, on
    /// partially visible tiles too (where a tile product would multiply it by masked
    /// zeros).
    #[test]
    fn nan_stays_where_the_math_puts_it() {
        // (b, sq, sk, h, hkv, d): tiles of 128 keys; row 150 is on the diagonal tile.
        let dims = (1, 200, 200, 4, 2, 40);
        for isa in ISAS.into_iter().filter(|i| i.available()) {
            for (window, nan_in) in [((-1, 0), 0), ((30, 0), 1), ((30, 5), 0), ((-1, -1), 1)] {
                let p = problem(dims, 0.3, 0.0, window, false);
                let mut rng = StdRng::seed_from_u64(77);
                let mut x = random_inputs(&mut rng, &p, DType::F32);
                if nan_in == 0 {
                    x.q[((150 * 4) + 1) * 40 + 3] = f64::NAN; // q row 150, head 1
                } else {
                    x.k[((50 * 2) + 1) * 40] = f64::NAN; // key 50, kv head 1
                }
                let r = reference::<f64>(&p, None, &x, &|v| v);
                let case = Case { p: p.clone(), alibi: None, lays: [Lay::Contiguous; 5], isa };
                let got = fused::<f32>(&case, &p, &x, &r);
                for (name, got, want) in [("dq", &got[0], &r.dq), ("dk", &got[1], &r.dk), ("dv", &got[2], &r.dv)] {
                    let nan = |v: &[f64]| v.iter().map(|x| x.is_nan()).collect::<Vec<bool>>();
                    assert!(nan(want).iter().any(|&b| b), "{name}: the oracle has no NaN");
                    assert!(nan(want).iter().any(|&b| !b) || name == "dk" || name == "dv");
                    assert_eq!(nan(got), nan(want), "{isa:?} window {window:?} NaN in {nan_in}: {name}");
                    let finite_err =
                        got.iter().zip(want).filter(|(_, w)| !w.is_nan()).fold(0f64, |m, (g, w)| m.max((g - w).abs()));
                    assert!(finite_err < 1e-3, "{name}: {finite_err}");
                }
            }
        }
    }

    /// Rows that see no key get exactly zero dq, and add nothing to dk and dv.
    #[test]
    fn rows_without_keys_get_zero_gradients() {
        // Causal with sq > sk: the first sq - sk rows see nothing.
        let p = problem((1, 40, 10, 2, 1, 16), 0.25, 0.0, (-1, 0), false);
        let mut rng = StdRng::seed_from_u64(9);
        let x = random_inputs(&mut rng, &p, DType::F32);
        let r = reference::<f64>(&p, None, &x, &|v| v);
        for isa in ISAS.into_iter().filter(|i| i.available()) {
            let case = Case { p: p.clone(), alibi: None, lays: [Lay::Contiguous; 5], isa };
            let got = fused::<f32>(&case, &p, &x, &r);
            for i in 0..30 {
                assert!(got[0][i * 2 * 16..(i + 1) * 2 * 16].iter().all(|&v| v == 0.0), "row {i}");
            }
            assert!(max_err(&got[1], &r.dk) < 1e-4 && max_err(&got[2], &r.dv) < 1e-4);
        }
    }

    #[test]
    fn empty_dims_and_bad_lse() {
        let p = problem((1, 0, 5, 2, 1, 8), 0.5, 0.0, (-1, -1), false);
        let (q, k) =
            (store::<f32>(&[], (1, 0, 2, 8), Lay::Contiguous), store::<f32>(&[0.0; 40], (1, 5, 1, 8), Lay::Contiguous));
        let (dq, dk, dv) =
            backward(&p, (&q.0, &q.1), (&k.0, &k.1), (&k.0, &k.1), (&q.0, &q.1), (&q.0, &q.1), &[], None).unwrap();
        assert_eq!((to_f64(&dq).len(), to_f64(&dk), to_f64(&dv)), (0, vec![0.0; 40], vec![0.0; 40]));
        let p = problem((1, 5, 5, 1, 1, 8), 0.5, 0.0, (-1, -1), false);
        let err = backward(&p, (&k.0, &k.1), (&k.0, &k.1), (&k.0, &k.1), (&k.0, &k.1), (&k.0, &k.1), &[0.0; 4], None);
        assert!(err.unwrap_err().to_string().contains("expected 5 lse values"));
    }

    /// The tile product against an f64 product, for every kernel this CPU has, over block
    /// edges and both ways of reading A.
    #[test]
    fn matmul_kernels_match_f64() {
        let mut rng = StdRng::seed_from_u64(3);
        for isa in ISAS.into_iter().filter(|i| i.available()) {
            for _ in 0..300 {
                let m = rng.random_range(1..=40);
                let n = 16 * rng.random_range(1..=9);
                let k = rng.random_range(0..=70);
                let (ld_a, ldb, ldc) = (k.max(m) + rng.random_range(0..5), n + rng.random_range(0..5), n + 3);
                let (ars, acs) = if rng.random_bool(0.5) { (ld_a, 1) } else { (1, ld_a) };
                let a: Vec<f32> = (0..ld_a * ld_a.max(k).max(m) + 1).map(|_| rng.random_range(-1.0..1.0)).collect();
                let b: Vec<f32> = (0..k.max(1) * ldb).map(|_| rng.random_range(-1.0..1.0)).collect();
                let c0: Vec<f32> = (0..m * ldc).map(|_| rng.random_range(-1.0..1.0)).collect();
                let accumulate = rng.random_bool(0.5);
                let mut c = c0.clone();
                // SAFETY: `available` checked the instruction set.
                unsafe {
                    match isa {
                        Isa::Avx512 => mm::<AVX512>(m, n, k, &a, ars, acs, &b, ldb, &mut c, ldc, accumulate),
                        Isa::Avx2 => mm::<AVX2>(m, n, k, &a, ars, acs, &b, ldb, &mut c, ldc, accumulate),
                        Isa::Portable => mm::<PORTABLE>(m, n, k, &a, ars, acs, &b, ldb, &mut c, ldc, accumulate),
                    }
                }
                for r in 0..m {
                    for col in 0..ldc {
                        let got = c[r * ldc + col] as f64;
                        if col >= n {
                            assert_eq!(got, c0[r * ldc + col] as f64, "wrote outside C");
                            continue;
                        }
                        let terms = (0..k).map(|t| a[r * ars + t * acs] as f64 * b[t * ldb + col] as f64);
                        let init = if accumulate { c0[r * ldc + col] as f64 } else { 0.0 };
                        let want = init + terms.clone().sum::<f64>();
                        let bound =
                            (k + 1) as f64 * f32::EPSILON as f64 * (init.abs() + terms.map(f64::abs).sum::<f64>());
                        assert!((got - want).abs() <= bound, "{isa:?} m {m} n {n} k {k}: {got} vs {want}");
                    }
                }
            }
        }
    }

    /// CPU time of the process (all threads), in ms.
    fn cpu_ms() -> f64 {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap();
        let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
        // utime and stime, fields 14 and 15 of the line (11 and 12 after the name), in ticks
        (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) * 10.0
    }

    fn status_kib(key: &str) -> usize {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = s.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Timing note (run alone: `cargo test --release --lib backward_timing -- --ignored
    /// --nocapture --test-threads 1`): the f32 backward at (1,16,16,2048,2048,64), and the
    /// forward at the same shape for scale; with `NAIVE=1`, candle's naive path under
    /// autograd too; `CAUSAL=1` for the causal mask, `ISA=avx2|portable` to force kernels,
    /// `SEQ=n` for another sequence length (one call, for time and memory).
    #[test]
    #[ignore]
    fn backward_timing() {
        use candle_core::{Device, Tensor, Var, D};
        let s: usize = std::env::var("SEQ").map_or(2048, |v| v.parse().unwrap());
        // Beyond the default shape, only memory and time are of interest: O and lse are
        // then placeholders (the work does not depend on their values).
        let exact = s == 2048;
        let (b, h, d) = (1usize, 16usize, 64usize);
        let causal = std::env::var("CAUSAL").is_ok();
        let isa = match std::env::var("ISA").as_deref() {
            Ok("avx2") => Isa::Avx2,
            Ok("portable") => Isa::Portable,
            _ => Isa::detect(),
        };
        println!("kernels: {isa:?}");
        let p = problem((b, s, s, h, h, d), 0.125, 0.0, (-1, if causal { 0 } else { -1 }), false);
        let mut rng = StdRng::seed_from_u64(1);
        let mk = |rng: &mut StdRng| randn(rng, b * s * h * d).into_iter().map(|x| x as f32).collect::<Vec<f32>>();
        let (q, k, v, d_o) = (mk(&mut rng), mk(&mut rng), mk(&mut rng), mk(&mut rng));
        let lay = Layout::contiguous((b, s, h, d));
        let st = |x: &Vec<f32>| CpuStorage::F32(x.clone());
        let (qs, ks, vs, dos) = (st(&q), st(&k), st(&v), st(&d_o));
        let t = std::time::Instant::now();
        let o = if exact {
            super::super::forward(&p, (&qs, &lay), (&ks, &lay), (&vs, &lay), None).unwrap().0
        } else {
            st(&v)
        };
        let fwd_ms = t.elapsed().as_secs_f64() * 1e3;
        // lse, per (head, row), in f64.
        let mut lse = vec![10f32; h * s];
        lse.par_chunks_mut(s).enumerate().filter(|_| exact).for_each(|(hq, out)| {
            for (i, l) in out.iter_mut().enumerate() {
                let (lo, hi) = p.key_range(i);
                let sc: Vec<f64> = (lo..hi)
                    .map(|j| {
                        let (qi, kj) = (&q[(i * h + hq) * d..][..d], &k[(j * h + hq) * d..][..d]);
                        0.125 * qi.iter().zip(kj).map(|(a, b)| (a * b) as f64).sum::<f64>()
                    })
                    .collect();
                let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                *l = (m + sc.iter().map(|x| (x - m).exp()).sum::<f64>().ln()) as f32;
            }
        });
        let flops = 2.5 * 4.0 * (b * h * s * s * d) as f64 / if causal { 2.0 } else { 1.0 };
        let rss0 = status_kib("VmRSS");
        std::fs::write("/proc/self/clear_refs", "5").unwrap(); // resets VmHWM
        let (mut times, mut cpu) = (Vec::new(), Vec::new());
        for _ in 0..if exact { 7 } else { 1 } {
            let (t, c) = (std::time::Instant::now(), cpu_ms());
            let g = backward_with(&p, (&qs, &lay), (&ks, &lay), (&vs, &lay), (&o, &lay), (&dos, &lay), &lse, None, isa)
                .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            cpu.push(cpu_ms() - c);
            drop(g);
        }
        cpu.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("backward CPU time per call (all threads): {cpu:.0?} ms");
        let peak = status_kib("VmHWM");
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = times[times.len() / 2];
        println!(
            "backward (causal {causal}): min {:.1} ms, median {med:.1} ms ({:.1} GFLOP/s at the median), all {times:.1?}; forward {fwd_ms:.1} ms (first call); peak RSS growth {:.1} MiB (outputs alone: {:.1} MiB)",
            times[0],
            flops / med / 1e6,
            (peak.saturating_sub(rss0)) as f64 / 1024.0,
            3.0 * (b * s * h * d * 4) as f64 / (1 << 20) as f64
        );
        if !exact {
            return;
        }
        let (mut fwd, mut fwd_cpu) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (t, c) = (std::time::Instant::now(), cpu_ms());
            drop(super::super::forward(&p, (&qs, &lay), (&ks, &lay), (&vs, &lay), None).unwrap());
            fwd.push(t.elapsed().as_secs_f64() * 1e3);
            fwd_cpu.push(cpu_ms() - c);
        }
        fwd.sort_by(|a, b| a.partial_cmp(b).unwrap());
        fwd_cpu.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("forward: median {:.1} ms of {fwd:.1?}; CPU time per call {fwd_cpu:.0?} ms", fwd[2]);

        if std::env::var("NAIVE").is_err() {
            return;
        }
        // candle's naive path under autograd (differentiable softmax), forward + backward.
        let dev = Device::Cpu;
        let tensor = |x: &Vec<f32>| Tensor::from_vec(x.clone(), (b, s, h, d), &dev).unwrap();
        let (qv, kv, vv) = (
            Var::from_tensor(&tensor(&q)).unwrap(),
            Var::from_tensor(&tensor(&k)).unwrap(),
            Var::from_tensor(&tensor(&v)).unwrap(),
        );
        let dot = tensor(&d_o).transpose(1, 2).unwrap().contiguous().unwrap();
        for _ in 0..2 {
            let t = std::time::Instant::now();
            let (qt, kt, vt) = (
                qv.transpose(1, 2).unwrap().contiguous().unwrap(),
                kv.transpose(1, 2).unwrap().contiguous().unwrap(),
                vv.transpose(1, 2).unwrap().contiguous().unwrap(),
            );
            let sc = (qt.matmul(&kt.t().unwrap()).unwrap() * 0.125).unwrap();
            let pr = candle_nn::ops::softmax(&sc, D::Minus1).unwrap();
            let out = pr.matmul(&vt).unwrap();
            let loss = (out * &dot).unwrap().sum_all().unwrap();
            let t_fwd = t.elapsed().as_secs_f64() * 1e3;
            let grads = loss.backward().unwrap();
            let total = t.elapsed().as_secs_f64() * 1e3;
            assert!(grads.get(&qv).is_some() && grads.get(&kv).is_some() && grads.get(&vv).is_some());
            println!("naive autograd: forward {t_fwd:.0} ms, backward {:.0} ms, total {total:.0} ms", total - t_fwd);
        }
    }
}
