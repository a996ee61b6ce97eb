//! The forward pass proper. [`run`] cuts a call's sequences (the batch entries of a dense
//! call, the sequences of a packed one: [`SeqIn`]) into work items (sequence, kv head,
//! query block, key split) and runs them on rayon in waves of consecutive sequences
//! ([`run_items`]; pipelined across waves, [`run_pipelined`]). [`attend`] runs one item over its key tiles:
//! `S = Q Kᵀ`, the online [`softmax_step`], `acc = corr·acc + P V`, the products in one of
//! four strategies ([`Products`]); tiles that no row of the item sees are skipped, and mask
//! arithmetic runs only on tiles that some row sees in part. [`merge_splits`] combines the
//! key splits of decode calls (split-KV). All of it is generic over the element type and
//! inlined into the per-path instances of `cpu/mod.rs`, which compile it for their
//! instruction set.

use candle_core::{bail, Result};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;
use std::f32::consts::LOG2_E;

use crate::limits::PRESCALE_ABOVE_LOG2;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::pack::{has_avx2, kv_tile, padded_stride, Element, Input, KvRing, SharedKv, KEYS_PER_TILE, KT_LD, S_LD};
use super::softmax::{add_alibi, exp2_f32, exp2_sub_in_place, row_max, softcap_in_place, LANES};
#[cfg(target_arch = "x86_64")]
use super::{amx, avx2, avx512};
use crate::problem::Problem;

/// Query rows per work item, counted over the q heads that share one kv head (a group of
/// `g` heads takes `max(1, 48 / g)` positions). Measured: `lab/cpu-history.md`.
const ROWS_PER_ITEM: usize = 48;
/// Calls with at most this many query rows are decode-like and may split the keys.
const DECODE_MAX_SEQ_Q: usize = 16;
/// Items with at most this many rows and one query block use direct dot products and
/// axpys instead of gemm (decode: 1–8 q heads per kv head).
const DIRECT_MAX_ROWS: usize = 8;
/// A key split is never shorter than this, so each split amortizes its merge.
const MIN_KEYS_PER_SPLIT: usize = 256;

/// The instruction sets an [`attend`] instance is compiled for and may use (its `KIND`):
/// baseline (the `gemm` paths), AVX2 + FMA kernels, AVX-512F kernels, AVX-512F with
/// AVX512-BF16 (`vdpbf16ps`), and that with AMX-BF16 tiles.
pub(super) const PORTABLE: u8 = 0;
pub(super) const AVX2: u8 = 1;
pub(super) const AVX512: u8 = 2;
pub(super) const AVX512_BF16: u8 = 3;
pub(super) const AMX: u8 = 4;

/// Keys per step of the AMX path: [`AMX_PANELS`] stored key tiles, whose Kᵀ and V blocks
/// the tile kernels take as panels. Per step the item pays a fixed cost (per row: the row
/// max's and the sum's reductions, the running max and sum, the rescale; per item: the
/// accumulator tiles loaded and stored around `P V`), so it runs fewer, wider steps than
/// the other paths.
#[cfg(target_arch = "x86_64")]
const AMX_PANELS: usize = 4;
#[cfg(target_arch = "x86_64")]
const AMX_KEYS: usize = AMX_PANELS * KEYS_PER_TILE;
/// The S row stride of the AMX path (its steps are wider than `S_LD`).
#[cfg(target_arch = "x86_64")]
const S_LD_AMX: usize = padded_stride(AMX_KEYS);
/// The row stride, in bf16, of the AMX path's bf16 probabilities.
#[cfg(target_arch = "x86_64")]
const PB_LD_AMX: usize = AMX_KEYS + 32;

/// The row stride, in bf16, of the probabilities rounded to bf16 for the bf16 `P V`
/// products (a whole number of lines, not a multiple of 4 KiB).
const PB_LD: usize = KEYS_PER_TILE + 32;

/// One sequence of a call: one batch entry of a dense call, or one sequence of a packed
/// one, as `cpu/mod.rs` describes it to [`run`].
pub(super) struct SeqIn<'a, T> {
    /// The sequence's own problem, batch 1 ([`Problem::sequence`] for a packed call).
    pub p: Problem,
    /// Row `(0, i, h)` is the sequence's row `i` of head `h`.
    pub q: Input<'a, T>,
    pub k: Input<'a, T>,
    pub v: Input<'a, T>,
    /// The sequence's `heads` ALiBi slopes.
    pub alibi: Option<&'a [f32]>,
    /// Its first row in the `(rows, heads, d)` output.
    pub out_row0: usize,
    /// The LSE of its row `i`, head `h` is element `lse0 + h·lse_head + i`.
    pub lse0: usize,
    pub lse_head: usize,
    /// The attend loop of the sequence's path.
    pub attend: AttendFn<T>,
    /// Whether that path multiplies bf16 pairs when it packs K and V (prefill): then the
    /// packed blocks hold bf16 pairs ([`SharedKv::new`]).
    pub pairs: bool,
}

/// What every work item of one sequence shares.
pub(super) struct Ctx<'a, T> {
    p: Problem,
    q: Input<'a, T>,
    k: Input<'a, T>,
    v: Input<'a, T>,
    alibi: Option<&'a [f32]>,
    /// Query positions per item; rows per item = `q_block × group`.
    q_block: usize,
    n_qblocks: usize,
    /// Key splits per (kv heads, query block) group.
    n_splits: usize,
    /// Kv heads per item ([`decode_heads`]).
    heads: usize,
    /// When several query blocks reuse each key, K and V are prepared once per call
    /// instead of once per tile and item; the sequence's keys are slot `kv_slot`.
    shared: Option<&'a SharedKv>,
    kv_slot: usize,
    out_row0: usize,
    lse0: usize,
    lse_head: usize,
    attend: AttendFn<T>,
    /// The call's `(rows, heads, d)` output and its LSE, into which an item without key
    /// splits writes its rows ([`write_item`]).
    out: SendPtr<T>,
    lse: Option<SendPtr<f32>>,
}

/// Whether a call has several query blocks per (batch, kv head), so that each key is
/// reused by several items and [`run`] packs K and V once ([`SharedKv`]): prefill. With
/// one query block (decode-like calls) items read K and V in place.
pub(super) fn packs_kv(p: &Problem) -> bool {
    p.heads > 0 && p.kv_heads > 0 && p.seq_q > (ROWS_PER_ITEM / p.group_size()).max(1)
}

/// The kv heads that one item takes: all of them in single-query calls whose items run
/// the direct products (at most [`DIRECT_MAX_ROWS`] q heads per kv head), else one. A
/// decode item then walks each key's rows of every kv head, which lie together in the
/// `(seq, heads, d)` layout, so its K and V reads are sequential and the hardware
/// prefetchers follow them; the keys are split (split-KV) to occupy the threads. Per kv
/// head, the rows of one key are 256 B (bf16, d = 128) of every 2 KiB: measured
/// single-thread, (1,32,8,1,4096,128) took 3.7 ms in bf16 and 4.4 ms in f32 that way,
/// against 2.4 and 2.3 ms for the same bytes and work with the head's keys contiguous
/// (1,4,1,1,32768,128). The record: `lab/cpu-history.md`.
fn decode_heads(p: &Problem, n_qblocks: usize) -> usize {
    let g = p.group_size();
    if p.seq_q == 1 && n_qblocks == 1 && g <= DIRECT_MAX_ROWS && p.kv_heads > 0 {
        p.kv_heads
    } else {
        1
    }
}

/// A compiled instance of [`attend`] (`cpu/mod.rs` picks one per sequence).
pub(super) type AttendFn<T> = unsafe fn(&Ctx<'_, T>, &Item, &mut Scratch);

/// One unit of parallel work: query positions `q0..q1` of all q heads of kv heads
/// `kvh..kvh + heads` in sequence `seq`, against keys `k_lo..k_hi`. Items take several kv
/// heads only in single-query decode calls ([`decode_heads`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    seq: usize,
    kvh: usize,
    heads: usize,
    q0: usize,
    q1: usize,
    k_lo: usize,
    k_hi: usize,
    split: usize,
}

impl Item {
    /// The q heads per query position: the `g` of each of its kv heads.
    #[inline(always)]
    fn width(&self, g: usize) -> usize {
        g * self.heads
    }

    /// Its rows: query positions × q heads.
    #[inline(always)]
    fn rows(&self, g: usize) -> usize {
        (self.q1 - self.q0) * self.width(g)
    }

    /// Row `r`'s query position and q head ([`Scratch`]'s row order).
    #[inline(always)]
    fn row_at(&self, r: usize, g: usize) -> (usize, usize) {
        let w = self.width(g);
        (self.q0 + r / w, self.kvh * g + r % w)
    }
}

/// Per-thread buffers, reused across items. Row `r` of an item is query position
/// `q0 + r / w`, q head `kvh·g + r % w` with `w = g·heads` ([`Item::row_at`]), which is
/// also the output's memory order.
#[derive(Default)]
pub(super) struct Scratch {
    q: Vec<f32>,
    s: Vec<f32>,
    acc: Vec<f32>,
    m: Vec<f32>,
    l: Vec<f32>,
    /// Per row: `e^(m_old - m_new)`, the factor for `acc` before this tile's `P V`.
    corr: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    /// The bf16 paths: the item's Q rows as bf16 (unscaled), and P rounded to bf16, as
    /// bf16 pairs (u32, so that the kernels' 4-byte reads are aligned).
    qb: Vec<u32>,
    pb: Vec<u32>,
}

impl Scratch {
    /// The bytes its buffers hold.
    fn bytes(&self) -> usize {
        let f = [&self.q, &self.s, &self.acc, &self.m, &self.l, &self.corr, &self.k, &self.v];
        4 * (f.iter().map(|b| b.capacity()).sum::<usize>() + self.qb.capacity() + self.pb.capacity())
    }

    /// Sizes the buffers for an item of `rows` rows (Q, S and the accumulator for `alloc ≥
    /// rows`, the AMX tiles' multiple of 16) and starts its softmax state: `m = -inf`,
    /// `l = 0`, and `acc = 0` when `zero_acc` (else the caller's first `P V` overwrites it,
    /// or the caller zeroes it). Q and S are overwritten before they are read.
    #[inline(always)]
    fn reset(&mut self, rows: usize, alloc: usize, d: usize, s_ld: usize, zero_acc: bool) {
        self.q.resize(alloc * d, 0.0);
        self.s.resize(alloc * s_ld, 0.0);
        if zero_acc {
            self.acc.clear();
        }
        self.acc.resize(alloc * d, 0.0);
        self.m.clear();
        self.m.resize(rows, f32::NEG_INFINITY);
        self.l.clear();
        self.l.resize(rows, 0.0);
        self.corr.resize(rows, 0.0);
    }
}

/// The [`Scratch`]es of the last calls' parallel loops, kept for the next ones. Rayon
/// starts the `map_init` state afresh for every piece of the item list that it hands a
/// thread (tens per call), and a fresh `Scratch` zeroes its buffers as they grow (S alone
/// is 200 KiB on the AMX path): measured at the (1,8,8,64,64,64) bf16 row, single-thread,
/// that zeroing was a quarter of the call. At most [`SCRATCH_KEEP`] are kept, none when
/// `FUSED_ATTN_CPU_KEEP_MIB` is 0; [`release_scratch`] frees them.
static SCRATCH: Mutex<Vec<Scratch>> = Mutex::new(Vec::new());
/// The most [`Scratch`]es kept: more than the threads that ever hold one at a time.
const SCRATCH_KEEP: usize = 64;

/// A [`Scratch`] taken from [`SCRATCH`] (or new), given back on drop.
struct KeptScratch(Scratch);

impl KeptScratch {
    fn take() -> Self {
        Self(SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default())
    }
}

impl Drop for KeptScratch {
    fn drop(&mut self) {
        // `forward` read the limit before any loop ran, so it is valid here.
        if super::pack::keep_limit_bytes().unwrap_or(0) == 0 {
            return;
        }
        let sc = std::mem::take(&mut self.0);
        let mut kept = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < SCRATCH_KEEP {
            kept.push(sc);
        }
    }
}

/// Frees the kept [`Scratch`]es; returns the bytes they held.
pub(super) fn release_scratch() -> usize {
    let freed = std::mem::take(&mut *SCRATCH.lock().unwrap_or_else(|e| e.into_inner()));
    freed.iter().map(Scratch::bytes).sum()
}

/// An item's online-softmax state after its last key tile.
struct Partial {
    m: Vec<f32>,
    l: Vec<f32>,
    acc: Vec<f32>,
}

/// The forward over `seqs`, all with the same heads, kv heads and head dim, into `out`,
/// the call's `(rows, heads, d)` output, and, when asked, one LSE of `heads × rows` values
/// (every sequence's rows and LSE entries lie where its [`SeqIn`] says, disjoint from the
/// others'). `batch` is how many sequences the per-call decisions (split-KV) see: the
/// batch of a dense call, 1 for a packed call, whose sequences are each decided as a
/// dense call on that sequence alone would be.
///
/// Writes every element of `out`, whatever it held (a fresh buffer, or a caller's reused
/// one: `attention_varlen_into`): rows that no item writes (sequences without keys) are
/// zeros. Stores only initialized values.
///
/// The items run in waves of consecutive sequences ([`run_items`]), each wave with enough
/// items to keep the threads busy whatever the mix of lengths; each item computes exactly
/// what the item of the same (kv head, query block, split) of a dense call on its sequence
/// does.
pub(super) fn run<T: Element>(
    seqs: Vec<SeqIn<'_, T>>,
    out: &mut [MaybeUninit<T>],
    rows: usize,
    batch: usize,
    want_lse: bool,
    (h, hkv, d): (usize, usize, usize),
) -> Result<Option<Vec<f32>>> {
    let n_out = rows * h * d;
    if out.len() != n_out {
        bail!("fused-attn internal: an output of {} elements for {rows} rows × {h} heads × {d}", out.len())
    }
    // Each row's natural-log log-sum-exp, when asked for; -inf for rows no item writes.
    let mut lse = want_lse.then(|| crate::alloc::try_vec(h * rows, f32::NEG_INFINITY, "the LSE")).transpose()?;
    // The items write every row of a sequence with queries and keys (sequences own
    // disjoint rows): when those cover the output, it is not zeroed first (a serial
    // 512 KiB fill at (1,8,8,512,512,64) bf16, before the threads start).
    let written: usize = seqs.iter().filter(|s| s.p.seq_q > 0 && s.p.seq_k > 0).map(|s| s.p.seq_q).sum();
    if n_out == 0 || hkv == 0 || written != rows {
        out.fill(MaybeUninit::new(T::zero()));
    }
    if n_out == 0 || hkv == 0 {
        return Ok(lse);
    }
    let g = h / hkv;
    let threads = rayon::current_num_threads();
    // The per-sequence decisions: query blocks, whether its keys are packed, key splits.
    let q_block_of = |s: &SeqIn<'_, T>| (ROWS_PER_ITEM / g).clamp(1, s.p.seq_q.max(1));
    let mut slots = Vec::new();
    let mut plans = Vec::with_capacity(seqs.len());
    // The packed blocks hold bf16 pairs when every sequence that packs its keys runs a
    // bf16 path (one path and dtype per call, so all or none).
    let mut pairs = true;
    for s in &seqs {
        let (sq, sk) = (s.p.seq_q, s.p.seq_k);
        let q_block = q_block_of(s);
        let n_qblocks = sq.div_ceil(q_block);
        debug_assert!(sq == 0 || (n_qblocks > 1) == packs_kv(&s.p));
        let heads = decode_heads(&s.p, n_qblocks);
        let n_groups = batch * (hkv / heads) * n_qblocks;
        let n_splits = if sq <= DECODE_MAX_SEQ_Q && n_groups < 4 * threads {
            (4 * threads).div_ceil(n_groups.max(1)).min(sk.div_ceil(MIN_KEYS_PER_SPLIT)).max(1)
        } else {
            1
        };
        let slot = (n_qblocks > 1 && sk > 0).then(|| {
            pairs &= s.pairs;
            slots.push((s.k, s.v, sk));
            slots.len() - 1
        });
        plans.push((q_block, n_qblocks, n_splits, slot, heads));
    }
    // The items (or the merges of their splits) write every element not zeroed above:
    // `written` covers the rows, and each item writes all heads of its rows.
    let out_ptr = SendPtr(out.as_mut_ptr().cast::<T>());
    let lse_ptr = lse.as_mut().map(|l| SendPtr(l.as_mut_ptr()));
    // The packing, the items and the merge in one entry into the pool: called from outside
    // it, each parallel loop would wake the workers and put the caller to sleep until they
    // finish, and the caller's wake-up between the packing and the items would idle both
    // cores.
    rayon::scope(|_| run_items(seqs, plans, (slots, pairs), (h, hkv, d), out_ptr, lse_ptr));
    Ok(lse)
}

/// The items of one sequence in a dense call's order: (kv heads, query block, split).
fn seq_items<T>(seq: usize, c: &Ctx<'_, T>, hkv: usize, items: &mut Vec<Item>) {
    let (sq, sk) = (c.p.seq_q, c.p.seq_k);
    if sq == 0 || sk == 0 {
        return;
    }
    // Whole key tiles, so that a split's tiles are the stored Kᵀ tiles.
    let per_split = sk.div_ceil(c.n_splits).next_multiple_of(KEYS_PER_TILE);
    for kvh in (0..hkv).step_by(c.heads) {
        for qb in 0..c.n_qblocks {
            let q0 = qb * c.q_block;
            for split in 0..c.n_splits {
                items.push(Item {
                    seq,
                    kvh,
                    heads: c.heads,
                    q0,
                    q1: (q0 + c.q_block).min(sq),
                    k_lo: split * per_split,
                    k_hi: ((split + 1) * per_split).min(sk),
                    split,
                });
            }
        }
    }
}

/// The items per thread from which a run of consecutive sequences forms a wave of its own
/// ([`run_items`]).
const WAVE_ITEMS_PER_THREAD: usize = 64;

/// The parallel part of [`run`]: runs the sequences in waves, each a run of consecutive
/// sequences with at least [`WAVE_ITEMS_PER_THREAD`] items per thread (so a long sequence
/// is a wave of its own, and short ones share one). A wave packs the keys of its sequences
/// that share them (`slots`), runs its items in one parallel loop and merges its key splits,
/// writing the output and LSE behind `out` and `lse` (each `(rows, heads, d)` and `heads ×
/// rows`, checked by [`run`]).
///
/// Waves, not one loop over every item of the call: a packed batch then runs each long
/// sequence as a dense call on it does, with its keys packed right before its items and
/// both threads on its items. Measured on the dev Xeon, 2 threads, 8 sequences of
/// 511–1831 tokens (f32, h16/kv4, d64, `bench_cpu --varlen`, outputs reused so that no
/// page faults differ): one loop over all items ran 227 / 121 ms (full / causal) against
/// 210 / 111 for a loop of dense calls; 2 sequences were equal, 4 within 4-8%.
///
/// Several waves without key splits run pipelined ([`run_pipelined`]): in order, but with
/// no wait at a wave's end. Measured on that batch (2-vCPU Zen 4 VM, 2 threads, 5 rounds
/// alternating `FUSED_ATTN_CPU_PIPELINE=0/1`, `packed_into`): 338.8 / 180.7 ms (median, full /
/// causal) one wave after another, 314.5 / 170.1 pipelined; instrumented, the waves one by
/// one left 0.2-2% of each wave's item time idle and spent 0.13-0.54 ms packing each wave.
#[allow(clippy::type_complexity)]
fn run_items<T: Element>(
    seqs: Vec<SeqIn<'_, T>>,
    plans: Vec<(usize, usize, usize, Option<usize>, usize)>,
    (slots, pairs): (Vec<(Input<'_, T>, Input<'_, T>, usize)>, bool),
    (h, hkv, d): (usize, usize, usize),
    out_ptr: SendPtr<T>,
    lse_ptr: Option<SendPtr<f32>>,
) {
    let g = h / hkv;
    let per_wave = WAVE_ITEMS_PER_THREAD * rayon::current_num_threads();
    let n = seqs.len();
    let seqs: Vec<(SeqIn<'_, T>, (usize, usize, usize, Option<usize>, usize))> = seqs.into_iter().zip(plans).collect();
    // The waves: sequences `first..last`, until their items reach `per_wave`.
    let mut waves = Vec::new();
    let mut first = 0;
    while first < n {
        let (mut last, mut count) = (first, 0);
        while last < n && count < per_wave {
            let (s, (_, n_qblocks, n_splits, _, heads)) = &seqs[last];
            if s.p.seq_q > 0 && s.p.seq_k > 0 {
                count += (hkv / heads) * n_qblocks * n_splits;
            }
            last += 1;
        }
        waves.push((first, last));
        first = last;
    }
    if waves.len() > 1 && seqs.iter().all(|(_, plan)| plan.2 == 1) && !pipeline_off() {
        run_pipelined(&seqs, &waves, (&slots, pairs), (hkv, d), out_ptr, lse_ptr);
        return;
    }
    for (first, last) in waves {
        let wave = &seqs[first..last];
        let wave_slots = wave_slots(wave, &slots);
        let shared = (!wave_slots.is_empty()).then(|| SharedKv::new(&wave_slots, hkv, d, pairs));
        let ctxs = wave_ctxs(wave, shared.as_ref(), out_ptr, lse_ptr);
        let items = wave_items(&ctxs, hkv);
        run_wave(&ctxs, &items, (g, h, d), out_ptr, lse_ptr);
    }
}

/// The key slots of a wave's sequences that pack their keys, in order (a sequence's
/// `Ctx::kv_slot` is its place among them: [`wave_ctxs`]).
#[allow(clippy::type_complexity)]
fn wave_slots<'a, T: Element>(
    wave: &[(SeqIn<'a, T>, (usize, usize, usize, Option<usize>, usize))],
    slots: &[(Input<'a, T>, Input<'a, T>, usize)],
) -> Vec<(Input<'a, T>, Input<'a, T>, usize)> {
    wave.iter().filter_map(|(_, plan)| plan.3.map(|x| slots[x])).collect()
}

/// The contexts of a wave's sequences, whose packed keys (if any) are `shared`'s slots in
/// [`wave_slots`]' order.
#[allow(clippy::type_complexity)]
fn wave_ctxs<'a, T: Element>(
    wave: &'a [(SeqIn<'a, T>, (usize, usize, usize, Option<usize>, usize))],
    shared: Option<&'a SharedKv>,
    out: SendPtr<T>,
    lse: Option<SendPtr<f32>>,
) -> Vec<Ctx<'a, T>> {
    let mut next_slot = 0;
    wave.iter()
        .map(|(s, (q_block, n_qblocks, n_splits, kv, heads))| {
            let slot = kv.map(|_| {
                next_slot += 1;
                next_slot - 1
            });
            Ctx {
                p: s.p.clone(),
                q: s.q,
                k: s.k,
                v: s.v,
                alibi: s.alibi,
                q_block: *q_block,
                n_qblocks: *n_qblocks,
                n_splits: *n_splits,
                heads: *heads,
                shared: slot.and(shared),
                kv_slot: slot.unwrap_or(0),
                out_row0: s.out_row0,
                lse0: s.lse0,
                lse_head: s.lse_head,
                attend: s.attend,
                out,
                lse,
            }
        })
        .collect()
}

/// A wave's items, sequence by sequence in a dense call's order ([`seq_items`]).
fn wave_items<T>(ctxs: &[Ctx<'_, T>], hkv: usize) -> Vec<Item> {
    let mut items = Vec::new();
    for (seq, c) in ctxs.iter().enumerate() {
        seq_items(seq, c, hkv, &mut items);
    }
    items
}

/// `FUSED_ATTN_CPU_PIPELINE=0`: the waves one after another, as before [`run_pipelined`]
/// (for A/Bs).
fn pipeline_off() -> bool {
    static OFF: OnceLock<bool> = OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("FUSED_ATTN_CPU_PIPELINE").is_some_and(|x| x == "0"))
}

/// [`run_items`] for several waves without key splits: the threads go through the waves in
/// order, each packing its part of a wave's key tiles and then running its part of the
/// wave's items, so that the next wave's keys are packed while the last items of this one
/// run, and no thread waits at a wave's end for the others (the waves one by one wait there
/// twice: after the packing and after the items). The waves' packed keys alternate between
/// the two buffer pairs of a [`KvRing`]; a thread waits only for what it reads or
/// overwrites: an item for its wave's packing, the packing of wave `w` for the items of wave
/// `w - 2` (the same buffers). The items and their order within a wave are the waves' own,
/// and each writes what it would (the results do not depend on the schedule).
///
/// Parts: thread `p` of `n` owns the `p`-th contiguous `1/n` of each wave's tiles and of its
/// items (what rayon's split of a dense call's loop gives a thread), takes its own part
/// first, then helps with the others' from their fronts. Until session 31 the threads took
/// every task in turn from one counter, so neighbouring items ran on different cores:
/// same-run A/Bs (`bench_cpu --varlen`, 2 threads, `lab/results/s31-cpu/`, `s31-call6/`) had
/// the parts 1-4% faster on a 2-vCPU Intel Xeon VM (f16 causal, `packed_into` against the
/// loop of dense calls: 1.004-1.009 against 0.944-0.983) and on the Sapphire Rapids host (f32
/// loop / packed 1.019 / 0.979 and 1.025 / 1.004 against 0.930 / 0.918 and 0.957 / 0.923).
#[allow(clippy::type_complexity)]
fn run_pipelined<T: Element>(
    seqs: &[(SeqIn<'_, T>, (usize, usize, usize, Option<usize>, usize))],
    waves: &[(usize, usize)],
    (slots, pairs): (&[(Input<'_, T>, Input<'_, T>, usize)], bool),
    (hkv, d): (usize, usize),
    out_ptr: SendPtr<T>,
    lse_ptr: Option<SendPtr<f32>>,
) {
    // Each wave's slots, and the buffers each parity needs.
    let wave_slots: Vec<Vec<(Input<'_, T>, Input<'_, T>, usize)>> =
        waves.iter().map(|&(first, last)| wave_slots(&seqs[first..last], slots)).collect();
    let mut lens = [(0, 0); 2];
    for (w, ws) in wave_slots.iter().enumerate() {
        let (k, v) = SharedKv::lens(ws, hkv, d);
        lens[w % 2] = (lens[w % 2].0.max(k), lens[w % 2].1.max(v));
    }
    let mut ring = KvRing::take(lens);
    // Each pair's pointers taken once: every view of a parity derives from the same ones.
    let ptrs = ring.ptrs();
    let shared: Vec<Option<SharedKv>> = wave_slots
        .iter()
        .enumerate()
        .map(|(w, ws)| {
            let (kt, v) = ptrs[w % 2];
            // SAFETY: the ring's buffers of this parity hold the largest `lens` of its waves
            // and outlive every view (dropped at the end of this function); waves of one
            // parity use them in turn (the packing of wave w waits for the items of w - 2).
            (!ws.is_empty()).then(|| unsafe { SharedKv::view(kt, v, ws, hkv, d, pairs) })
        })
        .collect();
    let ctxs: Vec<Vec<Ctx<'_, T>>> = waves
        .iter()
        .zip(&shared)
        .map(|(&(first, last), shared)| wave_ctxs(&seqs[first..last], shared.as_ref(), out_ptr, lse_ptr))
        .collect();
    let items: Vec<Vec<Item>> = ctxs.iter().map(|ctxs| wave_items(ctxs, hkv)).collect();
    let tiles: Vec<usize> = shared.iter().map(|s| s.as_ref().map_or(0, SharedKv::tiles)).collect();
    let nt = rayon::current_num_threads().max(1);
    // Part `p` of `n` tasks: `[p·⌈n/nt⌉, (p+1)·⌈n/nt⌉) ∩ [0, n)`.
    let part = |n: usize, p: usize| {
        let per = n.div_ceil(nt);
        ((p * per).min(n), ((p + 1) * per).min(n))
    };
    // Per wave and part, the next task's offset in the part (claimed by `fetch_add`, so each
    // task runs once, by whichever thread claims it).
    let counters =
        || -> Vec<Vec<AtomicUsize>> { waves.iter().map(|_| (0..nt).map(|_| AtomicUsize::new(0)).collect()).collect() };
    let (tile_next, item_next) = (counters(), counters());
    let packed: Vec<AtomicUsize> = waves.iter().map(|_| AtomicUsize::new(0)).collect();
    let done: Vec<AtomicUsize> = waves.iter().map(|_| AtomicUsize::new(0)).collect();
    let avx2 = has_avx2();
    // Set when a task unwinds, so that the others stop waiting for what it would have done
    // and the panic reaches the caller instead of a hang.
    let failed = AtomicBool::new(false);
    // Claims the tasks of wave `w`'s parts, `home` first, and runs each.
    let claim = |next: &[AtomicUsize], n: usize, home: usize, run: &mut dyn FnMut(usize)| {
        for q in 0..nt {
            let p = (home + q) % nt;
            let (lo, hi) = part(n, p);
            loop {
                let i = lo + next[p].fetch_add(1, Ordering::Relaxed);
                if i >= hi {
                    break;
                }
                run(i);
            }
        }
    };
    (0..nt).into_par_iter().with_max_len(1).for_each(|home| {
        let _flag = FlagOnUnwind(&failed);
        let mut sc = KeptScratch::take();
        for w in 0..waves.len() {
            if tiles[w] > 0 {
                if w >= 2 {
                    wait_for(&done[w - 2], items[w - 2].len(), &failed);
                }
                let kv = shared[w].as_ref().expect("a wave with tiles has its blocks");
                claim(&tile_next[w], tiles[w], home, &mut |i| {
                    // SAFETY: tile i is claimed once, so this is its only packing; the items
                    // that read it wait for `packed[w]`, and those of wave w - 2, which read
                    // the same buffers, are done.
                    unsafe { kv.pack_tile(&wave_slots[w], i, avx2) };
                    packed[w].fetch_add(1, Ordering::Release);
                });
                wait_for(&packed[w], tiles[w], &failed);
            }
            claim(&item_next[w], items[w].len(), home, &mut |i| {
                let it = &items[w][i];
                let ctx = &ctxs[w][it.seq];
                // SAFETY: as in `run_wave`: `attend` reads the inputs inside the bounds
                // `Input::new` checked and the wave's packed blocks, all written (above), and
                // writes `sc` and its item's own rows of the output and LSE.
                unsafe { (ctx.attend)(ctx, it, &mut sc.0) };
                done[w].fetch_add(1, Ordering::Release);
            });
        }
    });
}

/// Sets its flag when dropped during a panic ([`run_pipelined`]'s tasks).
struct FlagOnUnwind<'a>(&'a AtomicBool);

impl Drop for FlagOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Waits until `count` reaches `n` (spins briefly, then yields the core); panics when
/// `failed` says another task panicked (what it owed `count` will never come).
fn wait_for(count: &AtomicUsize, n: usize, failed: &AtomicBool) {
    let mut spins = 0u32;
    while count.load(Ordering::Acquire) < n {
        assert!(!failed.load(Ordering::Acquire), "fused-attn cpu: a pipelined task panicked");
        if spins < 1 << 10 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// One wave of [`run_items`]: its items in one parallel loop, then the merges of its key
/// splits.
fn run_wave<T: Element>(
    ctxs: &[Ctx<'_, T>],
    items: &[Item],
    (g, h, d): (usize, usize, usize),
    out_ptr: SendPtr<T>,
    lse_ptr: Option<SendPtr<f32>>,
) {
    let partials: Vec<Option<Partial>> = items
        .par_iter()
        .map_init(KeptScratch::take, |sc, it| {
            let sc = &mut sc.0;
            let ctx = &ctxs[it.seq];
            // SAFETY: `attend` reads the inputs only inside the bounds `Input::new` (or
            // `Input::paged`) checked and writes only `sc`, which it sizes itself.
            unsafe { (ctx.attend)(ctx, it, sc) };
            let rows = it.rows(g);
            if ctx.n_splits > 1 {
                return Some(Partial {
                    m: sc.m[..rows].to_vec(),
                    l: sc.l[..rows].to_vec(),
                    acc: sc.acc[..rows * d].to_vec(),
                });
            }
            None // `attend` wrote the item's rows
        })
        .collect();

    // The split groups: the first item of each (sequence, kv head, query block) of a
    // sequence whose keys were split; its splits follow it.
    let groups: Vec<usize> =
        (0..items.len()).filter(|&x| items[x].split == 0 && ctxs[items[x].seq].n_splits > 1).collect();
    groups.par_iter().for_each(|&first| {
        let it = &items[first];
        let ctx = &ctxs[it.seq];
        let splits = &partials[first..][..ctx.n_splits];
        // SAFETY: each group owns its rows of `out` and of the LSE, as the items did.
        unsafe { merge_splits(ctx, it, splits, (h, d), out_ptr, lse_ptr) };
    });
}

/// A row's natural-log log-sum-exp from its running max `m` (base-2 units, as the scores
/// are kept) and its sum `l = Σ 2^(x - m)`: `(m + log2 l)·ln 2`; `-inf` for a row that saw
/// no key (`l = 0`); NaN stays NaN.
fn row_lse(m: f32, l: f32) -> f32 {
    if l == 0.0 {
        f32::NEG_INFINITY
    } else {
        (m + l.log2()) * std::f32::consts::LN_2
    }
}

/// Combines the key splits of one (kv head, query block) group, whose first item is `it`,
/// and writes its output rows (and LSE entries): `acc = Σ e^(m_s - M) acc_s`,
/// `l = Σ e^(m_s - M) l_s`, `out = acc / l`.
///
/// # Safety
/// No other thread writes the group's rows of `out` and `lse` meanwhile; both buffers are
/// the call's, of the sizes [`run`] checked.
unsafe fn merge_splits<T: Element>(
    ctx: &Ctx<'_, T>,
    it: &Item,
    splits: &[Option<Partial>],
    (h, d): (usize, usize),
    out: SendPtr<T>,
    lse: Option<SendPtr<f32>>,
) {
    let p = &ctx.p;
    let g = p.group_size();
    let splits: Vec<&Partial> = splits.iter().map(|s| s.as_ref().expect("split items keep their partials")).collect();
    let (q0, q1, kvh) = (it.q0, it.q1, it.kvh);
    let (rows, w) = (it.rows(g), it.width(g));
    let mut acc = vec![0f32; rows * d];
    let mut l = vec![0f32; rows];
    for r in 0..rows {
        let m_max = splits.iter().fold(f32::NEG_INFINITY, |a, s| a.max(s.m[r]));
        let m_use = if m_max == f32::NEG_INFINITY { 0.0 } else { m_max };
        for s in &splits {
            let w = (s.m[r] - m_use).exp2();
            l[r] += w * s.l[r];
            for (a, x) in acc[r * d..][..d].iter_mut().zip(&s.acc[r * d..][..d]) {
                *a += w * x;
            }
        }
    }
    if let Some(lse) = lse {
        for (r, &lr) in l.iter().enumerate() {
            let m_max = splits.iter().fold(f32::NEG_INFINITY, |a, s| a.max(s.m[r]));
            let (i, hq) = it.row_at(r, g);
            let v = row_lse(if m_max == f32::NEG_INFINITY { 0.0 } else { m_max }, lr);
            // SAFETY: the caller's contract; the entry lies inside the LSE buffer.
            unsafe { *lse.get().add(ctx.lse0 + hq * ctx.lse_head + i) = v };
        }
    }
    let mut buf = vec![0f32; w * d];
    for i in q0..q1 {
        let r0 = (i - q0) * w;
        finalize_rows(&acc[r0 * d..][..w * d], &l[r0..][..w], d, &mut buf);
        // SAFETY: the caller's contract; the row group lies inside `out`.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(out.get().add(((ctx.out_row0 + i) * h + kvh * g) * d), w * d) };
        T::from_f32(&buf, dst);
    }
}

/// `acc *= corr` per row of `d` (the online softmax's correction for a grown row max).
fn rescale_rows(acc: &mut [f32], corr: &[f32], d: usize) {
    for (acc, &c) in acc.chunks_exact_mut(d).zip(corr) {
        if c != 1.0 {
            acc.iter_mut().for_each(|a| *a *= c);
        }
    }
}

/// `out = acc / l` per row; a row that saw no key (`l == 0`) outputs zeros. A NaN `l`
/// stays NaN.
fn finalize_rows(acc: &[f32], l: &[f32], d: usize, out: &mut [f32]) {
    for (r, &lr) in l.iter().enumerate() {
        let inv = if lr == 0.0 { 0.0 } else { 1.0 / lr };
        for (o, a) in out[r * d..][..d].iter_mut().zip(&acc[r * d..][..d]) {
            *o = a * inv;
        }
    }
}

/// A pointer shared across rayon tasks that write disjoint ranges.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: only used to write disjoint ranges of one buffer from several threads.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

/// How an item computes its two tile products, chosen once per item. Each variant reads
/// K and V from one place and multiplies them in one way.
#[derive(Clone, Copy)]
enum Products<'a> {
    /// Prefill on the AVX2 path with `d % 8 == 0`: the packed Kᵀ/V blocks of [`SharedKv`]
    /// through the register-blocked [`avx2`] kernels, which also rescale the accumulator.
    #[cfg(target_arch = "x86_64")]
    PackedAvx2(&'a SharedKv),
    /// Prefill on the AVX-512 paths with f32 blocks: the [`avx512`] f32 kernels (any d).
    #[cfg(target_arch = "x86_64")]
    PackedAvx512(&'a SharedKv),
    /// Prefill on the `avx512-bf16` path with bf16 pair blocks: the [`avx512`] `vdpbf16ps`
    /// kernels, P rounded to bf16.
    #[cfg(target_arch = "x86_64")]
    PackedBf16(&'a SharedKv),
    /// Prefill on the `avx512-amx` path with bf16 pair blocks (`d % 32 == 0`): the [`amx`]
    /// tile kernels, P rounded to bf16.
    #[cfg(target_arch = "x86_64")]
    PackedAmx(&'a SharedKv),
    /// Prefill otherwise: the packed blocks through `gemm`, every operand already in the
    /// column-major layout gemm's micro-kernel reads, so gemm packs nothing.
    PackedGemm(&'a SharedKv),
    /// One query block of at most [`DIRECT_MAX_ROWS`] rows (decode): dot products and axpys
    /// straight off the K/V rows ([`scores_direct`], [`pv_direct`]); in single-query calls
    /// one item takes every kv head ([`decode_heads`]).
    Direct,
    /// One query block of more rows: K/V tiles read in place (f32) or converted per tile
    /// ([`kv_tile`]), through `gemm`.
    StreamedGemm,
}

/// The keys `j0..j0 + jb` of one tile, and whether every row of the item sees all of them.
#[derive(Clone, Copy)]
struct Tile {
    j0: usize,
    jb: usize,
    full: bool,
    /// The first tile the item computes, on the f32 AVX-512 and the AMX kernels: its
    /// softmax asks for the next item's rows ([`prefetch_next_row`]). Not on the other
    /// paths (not measured there); on AMX it came with the 1024-key steps, whose profile
    /// showed the Q row loads and output stores missing the cache.
    first: bool,
}

/// Runs one item's key tiles and leaves its online-softmax state `(m, l, acc)` in `sc`
/// (rows `0..`[`Item::rows`]). Per tile: `S = Q Kᵀ`, [`softmax_step`], then
/// `acc = corr·acc + P V`, in the way [`Products`] says.
///
/// `KIND` ([`PORTABLE`] … [`AMX`]) says which kernels the caller's CPU runs: from
/// [`AVX2`] on, the softmax's row max and `2^x` pass use the [`avx2`] or [`avx512`]
/// kernels, and so do the prefill tile products ([`avx2`] when `d % 8 == 0`; [`avx512`] f32
/// kernels on f32 blocks; the bf16 kernels of [`AVX512_BF16`] and [`AMX`] on bf16 pair
/// blocks).
///
/// # Safety
/// `ctx.k` and `ctx.v` must have passed `Input::new` (every row lies inside its buffer);
/// the CPU has the instruction sets of `KIND` (and, for [`AMX`], the OS granted the tile
/// state).
#[inline(always)]
pub(super) unsafe fn attend<T: Element, const KIND: u8>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    let p = &ctx.p;
    let (d, g) = (p.head_dim, p.group_size());
    let rows = it.rows(g);
    debug_assert!(it.heads == 1 || (ctx.shared.is_none() && it.q1 - it.q0 == 1 && g <= DIRECT_MAX_ROWS));
    let products = match ctx.shared {
        #[cfg(target_arch = "x86_64")]
        Some(kv) if KIND == AMX && kv.pairs && d.is_multiple_of(2 * amx::TILE) => Products::PackedAmx(kv),
        #[cfg(target_arch = "x86_64")]
        Some(kv) if KIND >= AVX512_BF16 && kv.pairs => Products::PackedBf16(kv),
        #[cfg(target_arch = "x86_64")]
        Some(kv) if KIND >= AVX512 && !kv.pairs => Products::PackedAvx512(kv),
        #[cfg(target_arch = "x86_64")]
        Some(kv) if KIND == AVX2 && !kv.pairs && d.is_multiple_of(8) => Products::PackedAvx2(kv),
        Some(kv) => {
            debug_assert!(!kv.pairs, "bf16 pair blocks on a path without bf16 kernels");
            Products::PackedGemm(kv)
        }
        None if (it.q1 - it.q0) * g <= DIRECT_MAX_ROWS => Products::Direct,
        None => Products::StreamedGemm,
    };
    // The AMX tiles work on 16 rows at a time: the item's buffers get whole tiles.
    #[cfg(target_arch = "x86_64")]
    let alloc = if matches!(products, Products::PackedAmx(_)) { rows.next_multiple_of(amx::TILE) } else { rows };
    #[cfg(not(target_arch = "x86_64"))]
    let alloc = rows;
    #[cfg(target_arch = "x86_64")]
    let (s_ld, pb_ld) = if matches!(products, Products::PackedAmx(_)) { (S_LD_AMX, PB_LD_AMX) } else { (S_LD, PB_LD) };
    #[cfg(not(target_arch = "x86_64"))]
    let (s_ld, pb_ld) = (S_LD, PB_LD);
    // The AMX path's first step stores its `P V` over the accumulator instead of adding to
    // it (zero C tiles, no rescale), so the accumulator is not zeroed here.
    #[cfg(target_arch = "x86_64")]
    let fresh_store = matches!(products, Products::PackedAmx(_));
    #[cfg(not(target_arch = "x86_64"))]
    let fresh_store = false;
    sc.reset(rows, alloc, d, s_ld, !fresh_store);
    // No step has run yet: the accumulator holds nothing.
    let mut fresh = true;
    #[cfg(target_arch = "x86_64")]
    let bf16_products = matches!(products, Products::PackedBf16(_) | Products::PackedAmx(_));
    #[cfg(not(target_arch = "x86_64"))]
    let bf16_products = false;
    if bf16_products {
        load_q_bf16(ctx, it, alloc, &mut sc.qb);
        sc.pb.resize(alloc * pb_ld / 2, 0);
    } else {
        load_q(ctx, it, &mut sc.q[..rows * d]);
    }

    // Key ranges are monotone in the row, so the item's keys are [lo(q0), hi(q1 - 1)).
    let (first_lo, first_hi) = p.key_range(it.q0);
    let (last_lo, last_hi) = p.key_range(it.q1 - 1);
    let (lo, hi) = (first_lo.max(it.k_lo), last_hi.min(it.k_hi));
    // Tiles start at multiples of KEYS_PER_TILE, the stored Kᵀ tiles; the keys of the first
    // tile below `lo` are masked for every row (split boundaries are tile multiples too).
    // The AMX path's steps take up to AMX_PANELS of them.
    #[cfg(target_arch = "x86_64")]
    let mut first = matches!(products, Products::PackedAvx512(_) | Products::PackedAmx(_));
    #[cfg(not(target_arch = "x86_64"))]
    let mut first = false;
    #[cfg(target_arch = "x86_64")]
    let step = if matches!(products, Products::PackedAmx(_)) { AMX_KEYS } else { KEYS_PER_TILE };
    #[cfg(not(target_arch = "x86_64"))]
    let step = KEYS_PER_TILE;
    for j0 in (lo - lo % KEYS_PER_TILE..hi).step_by(step) {
        let j1 = (j0 + step).min(hi);
        // Every row sees every key of the tile: no mask arithmetic.
        let tile = Tile { j0, jb: j1 - j0, full: last_lo <= j0 && first_hi >= j1, first };
        if !tile.full
            && !(it.q0..it.q1).any(|i| {
                let (a, b) = p.key_range(i);
                a < j1 && b > j0
            })
        {
            continue; // no row sees this tile
        }
        first = false;
        let jb = tile.jb;
        #[allow(unused_variables)]
        let fresh = std::mem::replace(&mut fresh, false);
        match products {
            #[cfg(target_arch = "x86_64")]
            Products::PackedAvx2(kv) => {
                let (kt, v) = (kv.kt_tile(ctx.kv_slot, it.kvh, j0), kv.v_tile(ctx.kv_slot, it.kvh, j0));
                // SAFETY: the caller has AVX2 and FMA; Q holds rows × d; the Kᵀ tile has d
                // rows of 16·⌈jb/16⌉ ≤ KEYS_PER_TILE ≤ KT_LD floats at stride KT_LD inside
                // `kv.kt`; S holds rows × S_LD with 16·⌈jb/16⌉ ≤ S_LD.
                unsafe { avx2::scores(&sc.q, d, rows, kt, KT_LD, jb, sc.s.as_mut_ptr()) };
                // SAFETY: the caller's KIND contract.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, 1.0, false) };
                // SAFETY: the caller has AVX2 and FMA; d is a multiple of 8; acc holds
                // rows × d, corr rows; P (in S) rows × S_LD with jb ≤ S_LD; the V tile is
                // jb ≤ KEYS_PER_TILE rows of d at stride v_ld inside its block of `kv.v`.
                unsafe { avx2::accumulate(&mut sc.acc, &sc.corr, d, rows, sc.s.as_ptr(), v, kv.v_ld, jb) };
            }
            #[cfg(target_arch = "x86_64")]
            Products::PackedAvx512(kv) => {
                let (kt, v) = (kv.kt_tile(ctx.kv_slot, it.kvh, j0), kv.v_tile(ctx.kv_slot, it.kvh, j0));
                // SAFETY: the caller has AVX-512F; Q holds rows × d; the Kᵀ tile has d rows
                // of 16·⌈jb/16⌉ ≤ KT_LD floats at stride KT_LD inside `kv.kt`; S holds
                // rows × S_LD with 16·⌈jb/16⌉ ≤ S_LD.
                unsafe { avx512::scores_f32(sc.q.as_ptr(), d, rows, kt, KT_LD, jb, sc.s.as_mut_ptr(), S_LD) };
                // SAFETY: the caller's KIND contract.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, 1.0, false) };
                // SAFETY: the caller has AVX-512F; acc holds rows × d, corr rows; P (in S)
                // rows × S_LD with jb ≤ S_LD; the V tile is jb rows of d at stride v_ld.
                unsafe {
                    avx512::accumulate_f32::<S_LD>(
                        sc.acc.as_mut_ptr(),
                        sc.corr.as_ptr(),
                        d,
                        rows,
                        sc.s.as_ptr(),
                        v,
                        kv.v_ld,
                        jb,
                    )
                };
            }
            #[cfg(target_arch = "x86_64")]
            Products::PackedBf16(kv) => {
                let (kt, v) = (kv.kt_tile(ctx.kv_slot, it.kvh, j0).cast(), kv.v_tile(ctx.kv_slot, it.kvh, j0).cast());
                // SAFETY: the caller has AVX-512F and AVX512-BF16; the bf16 Q rows hold d/2
                // pairs each; the Kᵀ pair tile has d/2 rows of 16·⌈jb/16⌉ ≤ KT_LD pairs
                // (zero past jb) at stride KT_LD; S as above.
                unsafe {
                    avx512::scores_bf16(sc.qb.as_ptr(), d / 2, rows, d / 2, kt, KT_LD, jb, sc.s.as_mut_ptr(), S_LD)
                };
                // SAFETY: the caller's KIND contract; Q's scale multiplies the raw scores.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, q_scale(p), true) };
                // SAFETY: as above; P rounded to bf16 holds rows of ⌈jb/2⌉ ≤ PB_LD/2 pairs
                // (zero past jb) at stride PB_LD/2 pairs; the V pair tile ⌈jb/2⌉ ≤
                // KEYS_PER_TILE/2 pair rows of d (zero past jb) at stride v_ld.
                unsafe {
                    avx512::accumulate_bf16::<{ PB_LD / 2 }>(
                        sc.acc.as_mut_ptr(),
                        sc.corr.as_ptr(),
                        d,
                        rows,
                        sc.pb.as_ptr(),
                        v,
                        kv.v_ld,
                        jb.div_ceil(2),
                    )
                };
            }
            #[cfg(target_arch = "x86_64")]
            Products::PackedAmx(kv) => {
                // The step's stored tiles (j0 is a multiple of KEYS_PER_TILE): their Kᵀ and V
                // blocks are the kernels' panels; past the step's keys none is read.
                let (mut kt, mut v) = ([std::ptr::null::<u32>(); AMX_PANELS], [std::ptr::null::<u32>(); AMX_PANELS]);
                for (t, (kt, v)) in kt.iter_mut().zip(&mut v).enumerate().take(jb.div_ceil(KEYS_PER_TILE)) {
                    let jt = j0 + t * KEYS_PER_TILE;
                    (*kt, *v) = (kv.kt_tile(ctx.kv_slot, it.kvh, jt).cast(), kv.v_tile(ctx.kv_slot, it.kvh, jt).cast());
                }
                let cols = jb.next_multiple_of(2 * amx::TILE);
                // SAFETY: the caller has AMX with the OS's permission; alloc is a multiple
                // of 16, d and KEYS_PER_TILE of 32; the bf16 Q buffer holds alloc rows of d;
                // each Kᵀ pair block that a column below cols falls in has d/2 rows of
                // KEYS_PER_TILE ≤ KT_LD pairs (zero past the keys); S holds alloc rows of
                // S_LD_AMX ≥ AMX_KEYS ≥ cols.
                unsafe {
                    amx::scores(
                        sc.qb.as_ptr().cast(),
                        d,
                        alloc,
                        d,
                        (&kt, KEYS_PER_TILE),
                        KT_LD,
                        cols,
                        sc.s.as_mut_ptr(),
                        S_LD_AMX,
                    )
                };
                // SAFETY: the caller's KIND contract; Q's scale multiplies the raw scores;
                // S and P rows at the AMX strides.
                unsafe { softmax_step::<T, KIND, S_LD_AMX, PB_LD_AMX>(ctx, it, tile, sc, q_scale(p), true) };
                // The first step's `corr` is 0 and the accumulator holds nothing yet.
                if !fresh {
                    rescale_rows(&mut sc.acc[..rows * d], &sc.corr[..rows], d);
                }
                // SAFETY: as above; acc holds alloc rows of d; P rounded to bf16 holds alloc
                // rows of PB_LD_AMX ≥ cols (zero from jb to cols); each V pair block that a
                // key below cols falls in has KEYS_PER_TILE/2 pair rows of d (zero past the
                // keys) at stride v_ld.
                unsafe {
                    amx::accumulate(
                        fresh,
                        sc.acc.as_mut_ptr(),
                        d,
                        alloc,
                        sc.pb.as_ptr().cast(),
                        PB_LD_AMX,
                        (&v, KEYS_PER_TILE),
                        kv.v_ld,
                        cols,
                    )
                };
            }
            Products::PackedGemm(kv) => {
                // SAFETY: the Kᵀ tile is d columns of jb ≤ KT_LD keys at stride KT_LD inside
                // `kv.kt`.
                unsafe { scores_gemm(sc, d, rows, jb, kv.kt_tile(ctx.kv_slot, it.kvh, j0), (KT_LD, 1)) };
                // SAFETY: the caller's KIND contract.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, 1.0, false) };
                // SAFETY: the V tile is jb rows of d at stride v_ld inside its block of `kv.v`.
                unsafe { pv_gemm(sc, d, rows, jb, kv.v_tile(ctx.kv_slot, it.kvh, j0), kv.v_ld) };
            }
            Products::Direct => {
                // SAFETY: the caller's KIND contract.
                unsafe { scores_direct::<T, KIND>(ctx, it, sc, j0, jb) };
                // SAFETY: the caller's KIND contract.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, 1.0, false) };
                // SAFETY: the caller's KIND contract.
                unsafe { pv_direct::<T, KIND>(ctx, it, sc, j0, jb) };
            }
            Products::StreamedGemm => {
                let (k, k_stride) = kv_tile(&ctx.k, 0, j0, jb, it.kvh, d, &mut sc.k);
                // SAFETY: `kv_tile` returns jb rows of d at k_stride inside one buffer
                // (row-major K; gemm packs it).
                unsafe { scores_gemm(sc, d, rows, jb, k, (1, k_stride)) };
                // SAFETY: the caller's KIND contract.
                unsafe { softmax_step::<T, KIND, S_LD, PB_LD>(ctx, it, tile, sc, 1.0, false) };
                let (v, v_stride) = kv_tile(&ctx.v, 0, j0, jb, it.kvh, d, &mut sc.v);
                // SAFETY: as for K.
                unsafe { pv_gemm(sc, d, rows, jb, v, v_stride) };
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    if matches!(products, Products::PackedAmx(_)) {
        // SAFETY: the caller's AMX contract.
        unsafe { amx::release() };
    }
    if fresh && fresh_store {
        sc.acc.fill(0.0); // no row saw a key: the rows are zeros
    }
    if ctx.n_splits == 1 {
        // SAFETY: the caller's contract (`run`'s loop: the item owns its rows).
        unsafe { write_item(ctx, it, sc) };
    }
}

/// Asks for row `r`'s Q row and output row of the item after `it` in its thread's run
/// (the next query block of the same kv head; `r` past its rows asks for nothing), into
/// L2 while `it`'s tiles run: called once per row of an item's first tile, so that the
/// requests are spread over the softmax's rows rather than issued together (384 at once
/// filled the line fill buffers: 3% of the 512 row's samples on the prefetches). In the
/// `(seq, heads, d)` layout one position's rows of a head group lie `heads·d` elements
/// from the next (4 KiB at 16 heads, d = 64 in f32), so the hardware prefetchers, which
/// stop at page boundaries, miss every one of them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_next_row<T: Element>(ctx: &Ctx<'_, T>, it: &Item, r: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    let p = &ctx.p;
    let (h, d, g) = (p.heads, p.head_dim, p.group_size());
    let i = it.q1 + r / g;
    if i >= (it.q1 + ctx.q_block).min(p.seq_q) {
        return;
    }
    let hq = it.kvh * g + r % g;
    let bytes = d * std::mem::size_of::<T>();
    let out = ctx.out.get().wrapping_add(((ctx.out_row0 + i) * h + hq) * d).cast_const();
    for ptr in [ctx.q.row(0, i, hq, d).as_ptr(), out] {
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults; the address is inside the buffer.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(ptr.cast::<u8>().wrapping_add(off).cast()) };
        }
    }
}

/// Writes the rows of an item whose keys were not split: `out = acc / l` converted to `T`
/// (compiled into each [`attend`] instance, so the conversion uses its instruction set),
/// and the rows' LSE when asked for.
///
/// # Safety
/// Items partition the (sequence, position, kv-head group) rows of `ctx.out` (and their LSE
/// entries), sequences own disjoint rows, and both buffers outlive the parallel loop: no
/// other thread writes these rows meanwhile.
#[inline(always)]
unsafe fn write_item<T: Element>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch) {
    let p = &ctx.p;
    let (h, d, g) = (p.heads, p.head_dim, p.group_size());
    let rows = it.rows(g);
    let row_len = d * it.width(g);
    let normalized = &mut sc.q[..rows * d]; // Q is no longer needed: reuse it.
    finalize_rows(&sc.acc[..rows * d], &sc.l[..rows], d, normalized);
    for (i, src) in (it.q0..it.q1).zip(normalized.chunks_exact(row_len)) {
        let start = ((ctx.out_row0 + i) * h + it.kvh * g) * d;
        // SAFETY: the caller's contract; the range lies inside `out`.
        let dst = unsafe { std::slice::from_raw_parts_mut(ctx.out.get().add(start), row_len) };
        T::from_f32(src, dst);
    }
    if let Some(lse_ptr) = ctx.lse {
        for (r, (&m, &l)) in sc.m[..rows].iter().zip(&sc.l[..rows]).enumerate() {
            let (i, hq) = it.row_at(r, g);
            // SAFETY: as for `out`: the entry lies inside the `h × rows` LSE buffer.
            unsafe { *lse_ptr.get().add(ctx.lse0 + hq * ctx.lse_head + i) = row_lse(m, l) };
        }
    }
}

/// The factor Q's rows take: `scale·log2(e)` (scores in base 2), or `scale / softcap`.
#[inline(always)]
fn q_scale(p: &Problem) -> f32 {
    if p.softcap > 0.0 {
        p.scale / p.softcap
    } else {
        p.scale * LOG2_E
    }
}

/// The item's Q rows as bf16 pairs, unscaled (the bf16 products multiply the scores by
/// [`q_scale`] instead, so Q stays exact), `alloc` rows of `d/2` pairs (d is even) with the
/// rows past the item's zero.
#[inline(always)]
fn load_q_bf16<T: Element>(ctx: &Ctx<'_, T>, it: &Item, alloc: usize, qb: &mut Vec<u32>) {
    let p = &ctx.p;
    let (d, g) = (p.head_dim, p.group_size());
    let rows = it.rows(g);
    // Rows below `rows` are overwritten; those past them (the last AMX tile's) are zeroed.
    qb.resize(alloc * d / 2, 0);
    qb[rows * d / 2..].fill(0);
    for (r, dst) in qb.chunks_exact_mut(d / 2).take(rows).enumerate() {
        let (i, hq) = it.row_at(r, g);
        T::to_bf16_pairs(ctx.q.row(0, i, hq, d), dst);
    }
}

/// The item's Q rows in f32, times `scale·log2(e)`. Scores are kept in base 2
/// (`log2(e)·s`), so that the softmax's exponentials are `2^x`, whose range reduction is
/// exact. With a softcap c the score is c·tanh(scale·<q,k> / c): Q takes scale / c, and
/// [`softmax_step`] folds log2(e) into c.
#[inline(always)]
fn load_q<T: Element>(ctx: &Ctx<'_, T>, it: &Item, q: &mut [f32]) {
    let p = &ctx.p;
    let (d, g) = (p.head_dim, p.group_size());
    let q_scale = q_scale(p);
    for (r, dst) in q.chunks_exact_mut(d).enumerate() {
        let (i, hq) = it.row_at(r, g);
        T::to_f32(ctx.q.row(0, i, hq, d), dst);
        dst.iter_mut().for_each(|x| *x *= q_scale);
    }
}

/// `S = Q Kᵀ` through gemm for a K tile of `jb` keys whose element `(j, t)` lies at
/// `k + t·k_strides.0 + j·k_strides.1`. In gemm's column-major terms this is
/// Sᵀ (jb × rows) = K (jb × d) · Qᵀ (d × rows); Q rows and S rows are column-major operands
/// as they lie, and so is a stored Kᵀ tile (strides `(KT_LD, 1)`), so gemm packs nothing
/// then; row-major K rows (strides `(1, row stride)`) it packs.
///
/// # Safety
/// The K tile is readable at those strides for `j < jb`, `t < d`; `jb ≤ S_LD`.
#[inline(always)]
unsafe fn scores_gemm(sc: &mut Scratch, d: usize, rows: usize, jb: usize, k: *const f32, k_strides: (usize, usize)) {
    // SAFETY: S holds rows × S_LD (jb ≤ S_LD); Q holds rows × d; K as the caller says.
    unsafe {
        gemm(
            jb,
            rows,
            d,
            sc.s.as_mut_ptr(),
            S_LD as isize,
            1,
            false,
            k,
            k_strides.0 as isize,
            k_strides.1 as isize,
            sc.q.as_ptr(),
            d as isize,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

/// Keys per call of the AVX-512 direct kernels ([`avx512::direct_scores`],
/// [`avx512::direct_pv`]): the rows of one kv head for 16 keys (8 KiB at d = 128 in bf16)
/// stay in L1 while the kernel makes its passes over them.
const DIRECT_KEYS: usize = 16;

/// `S = Q Kᵀ` for a direct (decode) item. Keys go in chunks of [`DIRECT_KEYS`]; per chunk,
/// each of the item's kv heads against its rows (an item of several kv heads has one query
/// position, so head `hh`'s rows are `hh·g..(hh + 1)·g`), so that the reads walk each
/// key's kv heads in memory order. On the AVX-512 kinds f32, bf16 and f16 rows go through
/// [`avx512::direct_scores`] (bf16 and f16 converted in registers); otherwise one dot
/// product per (key, row), f16/bf16 rows converted into a `d`-float buffer that stays in
/// L1. Every path asks for the next chunk's rows of the kv head in L2 first
/// ([`prefetch_rows`]).
///
/// # Safety
/// The CPU has the instruction sets of `KIND`; `ctx.k` passed `Input::new` (or
/// `Input::paged`); `sc` was sized for the item ([`Scratch::reset`]).
#[inline(always)]
unsafe fn scores_direct<T: Element, const KIND: u8>(
    ctx: &Ctx<'_, T>,
    it: &Item,
    sc: &mut Scratch,
    j0: usize,
    jb: usize,
) {
    let (d, g) = (ctx.p.head_dim, ctx.p.group_size());
    let per = (it.q1 - it.q0) * g;
    let k = &ctx.k;
    sc.k.resize(d, 0.0);
    for j in (0..jb).step_by(DIRECT_KEYS) {
        let n = DIRECT_KEYS.min(jb - j);
        for hh in 0..it.heads {
            let q = &sc.q[hh * per * d..][..per * d];
            let s = &mut sc.s[hh * per * S_LD + j..];
            if j + 2 * DIRECT_KEYS <= jb && k.uniform(j0 + j + DIRECT_KEYS, DIRECT_KEYS) {
                // The next chunk's first row: in another page of a paged cache.
                prefetch_rows(k.row(0, j0 + j + DIRECT_KEYS, it.kvh + hh, d).as_ptr(), DIRECT_KEYS, k.st.seq, d);
            }
            #[cfg(target_arch = "x86_64")]
            if KIND >= AVX512
                && matches!(T::DTYPE, candle_core::DType::F32 | candle_core::DType::BF16 | candle_core::DType::F16)
            {
                let (kvh, uniform) = (it.kvh + hh, k.uniform(j0 + j, n));
                let first = k.row(0, j0 + j, kvh, d).as_ptr();
                // Row jj of the chunk: `seq` apart when uniform, else through the pages.
                let row = |jj: usize| {
                    if uniform {
                        first.wrapping_add(jj * k.st.seq)
                    } else {
                        k.row(0, j0 + j + jj, kvh, d).as_ptr()
                    }
                };
                let (q, s) = (q.as_ptr(), s.as_mut_ptr());
                match T::DTYPE {
                    // SAFETY: the caller has AVX-512F; row(jj) is a row of d elements (T =
                    // f32) inside the buffer for jj < n (`Input::new`/`paged` checked every
                    // row); Q holds per ≤ DIRECT_MAX_ROWS rows of d; S has per rows of
                    // S_LD ≥ j + n.
                    candle_core::DType::F32 => unsafe {
                        avx512::direct_scores(q, per, d, |jj| row(jj).cast::<f32>(), n, s, S_LD)
                    },
                    // SAFETY: as for f32; a bf16 is 2 bytes, the bits of a bf16.
                    candle_core::DType::BF16 => unsafe {
                        avx512::direct_scores(q, per, d, |jj| row(jj).cast::<u16>(), n, s, S_LD)
                    },
                    // SAFETY: as for f32; T is f16 (the only dtype left by the test above).
                    _ => unsafe { avx512::direct_scores(q, per, d, |jj| row(jj).cast::<half::f16>(), n, s, S_LD) },
                }
                continue;
            }
            for jj in j..j + n {
                let row = k.row(0, j0 + jj, it.kvh + hh, d);
                let krow = match T::as_f32(row) {
                    Some(x) => x,
                    None => {
                        T::to_f32(row, &mut sc.k[..d]);
                        &sc.k[..d]
                    }
                };
                for (r, qrow) in q.chunks_exact(d).enumerate() {
                    s[r * S_LD + jj - j] = dot(qrow, krow);
                }
            }
        }
    }
}

/// Asks for the `n` rows of `d` elements at `first`, `seq` elements apart, in L2 (the next
/// chunk of a direct item's keys for one kv head, while this chunk's are multiplied). The
/// hardware prefetchers did not follow the walk (16 keys a kv-head row apart, then the next
/// head's rows of the same keys): on a Zen 4 the decode rows ran 1.07–1.6× faster with it
/// (`lab/cpu-history.md`, session 21); into L1 (`_MM_HINT_T0`) it was slower than none, two
/// chunks ahead level with one.
#[inline(always)]
fn prefetch_rows<T>(first: *const T, n: usize, seq: usize, d: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = d * size_of::<T>();
        for jj in 0..n {
            let row = first.wrapping_add(jj * seq).cast::<i8>();
            for off in (0..bytes).step_by(64) {
                // SAFETY: a prefetch is a hint: it never faults, whatever the address.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(row.wrapping_add(off)) };
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (first, n, seq, d);
}

/// `acc = corr·acc + P V` for a direct (decode) item, walking keys and kv heads as
/// [`scores_direct`] does ([`avx512::direct_pv`] on the AVX-512 kinds for f32, bf16 and f16).
///
/// # Safety
/// As [`scores_direct`], for `ctx.v`.
#[inline(always)]
unsafe fn pv_direct<T: Element, const KIND: u8>(ctx: &Ctx<'_, T>, it: &Item, sc: &mut Scratch, j0: usize, jb: usize) {
    let (d, g) = (ctx.p.head_dim, ctx.p.group_size());
    let per = (it.q1 - it.q0) * g;
    let rows = it.rows(g);
    rescale_rows(&mut sc.acc[..rows * d], &sc.corr[..rows], d);
    let v = &ctx.v;
    sc.v.resize(d, 0.0);
    for j in (0..jb).step_by(DIRECT_KEYS) {
        let n = DIRECT_KEYS.min(jb - j);
        for hh in 0..it.heads {
            let acc = &mut sc.acc[hh * per * d..][..per * d];
            let p = &sc.s[hh * per * S_LD + j..];
            if j + 2 * DIRECT_KEYS <= jb && v.uniform(j0 + j + DIRECT_KEYS, DIRECT_KEYS) {
                prefetch_rows(v.row(0, j0 + j + DIRECT_KEYS, it.kvh + hh, d).as_ptr(), DIRECT_KEYS, v.st.seq, d);
            }
            #[cfg(target_arch = "x86_64")]
            if KIND >= AVX512 && v.uniform(j0 + j, n) {
                let first = v.row(0, j0 + j, it.kvh + hh, d).as_ptr();
                let (a, p) = (acc.as_mut_ptr(), p.as_ptr());
                match T::DTYPE {
                    candle_core::DType::F32 => {
                        // SAFETY: as in `scores_direct`; acc holds per rows of d; P (in S) per
                        // rows of at least n at S_LD.
                        unsafe { avx512::direct_pv(a, per, d, p, S_LD, first.cast::<f32>(), v.st.seq, n) };
                        continue;
                    }
                    candle_core::DType::BF16 => {
                        // SAFETY: as for f32; a bf16 is 2 bytes, the bits of a bf16.
                        unsafe { avx512::direct_pv(a, per, d, p, S_LD, first.cast::<u16>(), v.st.seq, n) };
                        continue;
                    }
                    candle_core::DType::F16 => {
                        // SAFETY: as for f32; T is f16.
                        unsafe { avx512::direct_pv(a, per, d, p, S_LD, first.cast::<half::f16>(), v.st.seq, n) };
                        continue;
                    }
                    _ => {}
                }
            }
            for jj in j..j + n {
                let row = v.row(0, j0 + jj, it.kvh + hh, d);
                let vrow = match T::as_f32(row) {
                    Some(x) => x,
                    None => {
                        T::to_f32(row, &mut sc.v[..d]);
                        &sc.v[..d]
                    }
                };
                for (r, acc) in acc.chunks_exact_mut(d).enumerate() {
                    let pr = p[r * S_LD + jj - j];
                    acc.iter_mut().zip(vrow).for_each(|(a, &x)| *a = pr.mul_add(x, *a));
                }
            }
        }
    }
}

/// Row `r` of the bf16 probabilities (PLD bf16 at a stride of PLD/2 pairs).
#[inline(always)]
fn bf16_row<const PLD: usize>(pb: &mut [u32], r: usize) -> &mut [u16] {
    let row = &mut pb[r * PLD / 2..][..PLD / 2];
    // SAFETY: a u32 is two u16 (and at least as aligned); the view covers exactly the row.
    unsafe { std::slice::from_raw_parts_mut(row.as_mut_ptr().cast::<u16>(), PLD) }
}

/// The online softmax over one tile of `S` (rows `SLD` floats apart), row by row: the raw
/// scores times `s_scale`
/// (1 where Q was scaled), then softcap, ALiBi and the masks transform them;
/// then, with `m` the running row max and `l` the running sum,
/// `m' = max(m, max_j s_j)`, `p_j = 2^(s_j - m')` in place of `s_j`,
/// `corr = 2^(m - m')`, `l' = corr·l + Σ p_j`. `corr` is left for the `P V` step to
/// rescale the accumulator. With `round_p` (the bf16 products) `P` is also rounded to bf16
/// into `sc.pb` (zeros past the tile's keys, up to the next multiple of 32), for the
/// `P V` products; `l` sums the unrounded values.
///
/// # Safety
/// The CPU has the instruction sets of `KIND`; with `round_p`, `KIND ≥ AVX512_BF16` and
/// `sc.pb` holds the item's rows of `PLD` bf16 (`PLD` ≥ the tile's keys rounded up to 32);
/// `sc.s` holds the item's rows of `SLD` ≥ the tile's keys.
#[inline(always)]
unsafe fn softmax_step<T: Element, const KIND: u8, const SLD: usize, const PLD: usize>(
    ctx: &Ctx<'_, T>,
    it: &Item,
    tile: Tile,
    sc: &mut Scratch,
    s_scale: f32,
    round_p: bool,
) {
    let p = &ctx.p;
    let g = p.group_size();
    let Tile { j0, jb, full, first: first_tile } = tile;
    let bare = p.softcap <= 0.0 && ctx.alibi.is_none();
    let plain = bare && full;
    // The item's first tile (f32 AVX-512 prefill, keys not split): the next item's rows
    // into L2.
    let prefetch = ctx.shared.is_some() && ctx.n_splits == 1 && first_tile;
    for r in 0..it.rows(g) {
        #[cfg(target_arch = "x86_64")]
        if prefetch {
            prefetch_next_row(ctx, it, r);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = prefetch;
        let (i, hq) = it.row_at(r, g);
        let srow = &mut sc.s[r * SLD..][..jb];
        // The bf16 products without softcap or ALiBi: the scale goes into the max and the
        // exponent, and the pass stores bf16 probabilities only. On a tile that some row
        // sees in part (the causal diagonal, windows) the pass runs over the row's visible
        // keys `a..b` alone and the masked probabilities are zeros, which is what `2^-inf`
        // gives them on the masked path.
        #[cfg(target_arch = "x86_64")]
        if KIND >= AVX512_BF16 && round_p && bare && s_scale > 0.0 && s_scale <= PRESCALE_ABOVE_LOG2 {
            let (a, b) = if full {
                (0, jb)
            } else {
                let (a, b) = p.key_range(i);
                let a = a.saturating_sub(j0).min(jb);
                (a, b.saturating_sub(j0).clamp(a, jb))
            };
            let m_old = sc.m[r];
            // SAFETY: the caller has AVX-512F (KIND ≥ AVX512); `c·x` is monotone in x.
            let m_new = m_old.max(s_scale * unsafe { avx512::row_max(&srow[a..b]) });
            let m_use = if m_new == f32::NEG_INFINITY { 0.0 } else { m_new };
            let dst = &mut bf16_row::<PLD>(&mut sc.pb, r)[..jb.next_multiple_of(32)];
            dst[..a].fill(0);
            // SAFETY: the caller has AVX-512F, AVX-512DQ and AVX512-BF16 (KIND ≥ AVX512_BF16:
            // the two bf16 paths require all three).
            let sum = unsafe { avx512::exp2_scaled_to_bf16(&srow[a..b], s_scale, m_use, &mut dst[a..]) };
            let corr = exp2_f32(m_old - m_use);
            sc.l[r] = sc.l[r] * corr + sum;
            sc.m[r] = m_new;
            sc.corr[r] = corr;
            continue;
        }
        // Large scales multiply the scores first (crate::limits): the fold into the exponent's
        // multiply-add is exact only while scaled scores stay small.
        let fused_scale = s_scale != 1.0 && plain && KIND >= AVX512 && s_scale <= PRESCALE_ABOVE_LOG2;
        if s_scale != 1.0 && !fused_scale {
            srow.iter_mut().for_each(|x| *x *= s_scale);
        }
        if p.softcap > 0.0 {
            softcap_in_place(srow, p.softcap * LOG2_E);
        }
        if let Some(slopes) = ctx.alibi {
            add_alibi(srow, slopes[hq] * LOG2_E, (p.diag(i) - j0 as i64) as f32);
        }
        if !full {
            let (a, b) = p.key_range(i);
            let a = a.saturating_sub(j0).min(jb);
            let b = b.saturating_sub(j0).clamp(a, jb);
            srow[..a].fill(f32::NEG_INFINITY);
            srow[b..].fill(f32::NEG_INFINITY);
        }
        let m_old = sc.m[r];
        let tile_max = if fused_scale {
            // SAFETY: the caller has AVX-512F (KIND ≥ AVX512).
            #[cfg(target_arch = "x86_64")]
            unsafe {
                avx512::scale_row_max(srow, s_scale)
            }
            #[cfg(not(target_arch = "x86_64"))]
            unreachable!()
        } else {
            // SAFETY: the caller's KIND contract.
            unsafe { tile_row_max::<KIND>(srow) }
        };
        let m_new = m_old.max(tile_max);
        // A row that has seen no visible score yet keeps m = -inf; exponentiate against
        // 0 so that its masked scores give 0 and NaN scores stay NaN.
        let m_use = if m_new == f32::NEG_INFINITY { 0.0 } else { m_new };
        // SAFETY: as above.
        let sum = unsafe { tile_exp2_sub::<KIND>(srow, m_use) };
        let corr = exp2_f32(m_old - m_use);
        sc.l[r] = sc.l[r] * corr + sum;
        sc.m[r] = m_new;
        sc.corr[r] = corr;
        #[cfg(target_arch = "x86_64")]
        if KIND >= AVX512_BF16 && round_p {
            let dst = &mut bf16_row::<PLD>(&mut sc.pb, r)[..jb.next_multiple_of(32)];
            // SAFETY: the caller has AVX-512F and AVX512-BF16 (KIND ≥ AVX512_BF16).
            unsafe { avx512::round_row_bf16(srow, dst) };
        }
    }
}

/// `acc = corr·acc + P V` through gemm: Oᵀ (d × rows) += Vᵀ (d × jb) · Pᵀ (jb × rows), with
/// V rows, P rows and the accumulator rows all column-major operands for gemm, so nothing
/// is packed.
///
/// # Safety
/// `v` points at `jb` rows of `d` readable floats at stride `v_stride`.
#[inline(always)]
unsafe fn pv_gemm(sc: &mut Scratch, d: usize, rows: usize, jb: usize, v: *const f32, v_stride: usize) {
    rescale_rows(&mut sc.acc, &sc.corr[..rows], d);
    // SAFETY: acc holds rows × d; P (in S) rows × S_LD; V as the caller says.
    unsafe {
        gemm(
            d,
            rows,
            jb,
            sc.acc.as_mut_ptr(),
            d as isize,
            1,
            true,
            v,
            v_stride as isize,
            1,
            sc.s.as_ptr(),
            S_LD as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

/// `<a, b>` with independent lanes, so that it vectorizes.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for ((l, &x), &y) in lanes.iter_mut().zip(x).zip(y) {
            *l = x.mul_add(y, *l);
        }
    }
    tail + lanes.iter().sum::<f32>()
}

/// [`row_max`] through the [`avx2`] or [`avx512`] kernel for those kinds.
///
/// # Safety
/// The CPU has the instruction sets of `KIND`.
#[inline(always)]
unsafe fn tile_row_max<const KIND: u8>(x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if KIND >= AVX512 {
            // SAFETY: the caller's contract.
            return unsafe { avx512::row_max(x) };
        }
        if KIND == AVX2 {
            // SAFETY: the caller's contract.
            return unsafe { avx2::row_max(x) };
        }
    }
    row_max(x)
}

/// [`exp2_sub_in_place`] through the [`avx2`] or [`avx512`] kernel for those kinds.
///
/// # Safety
/// The CPU has the instruction sets of `KIND`.
#[inline(always)]
unsafe fn tile_exp2_sub<const KIND: u8>(x: &mut [f32], m: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if KIND >= AVX512 {
            // SAFETY: the caller's contract.
            return unsafe { avx512::exp2_sub_sum(x, m) };
        }
        if KIND == AVX2 {
            // SAFETY: the caller's contract.
            return unsafe { avx2::exp2_sub_sum(x, m) };
        }
    }
    exp2_sub_in_place(x, m)
}
