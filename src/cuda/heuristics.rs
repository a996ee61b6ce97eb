//! Every launch decision, and the device facts they read.
//!
//! * [`use_decode`]: the prefill/decode crossover.
//! * [`instance`]: which kernel instance (tile) runs a problem.
//! * [`split_keys`]: how many blocks split a decode problem's keys, in units of the device's
//!   SMs.
//! * [`bwd_kv_splits`]: how many blocks of the backward share one kv head's group of q heads.
//! * [`prepare`]: a kernel ready to launch, with the device's attributes (compute capability,
//!   SM count, opt-in shared memory), the function's shared-memory attribute and occupancy read
//!   or set once per device and function, not per launch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use candle_core::cuda_backend::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream};
use candle_core::cuda_backend::{CudaDevice, DeviceId, WrapErr};
use candle_core::{bail, Result};

use super::instances::{
    bwd_large_smem, Arch, Dtype, Family, Instance, KernelKey, Smem, DECODE_BLOCK_ROWS, DECODE_KEYS_PER_ROUND, INSTANCES,
};
use super::{load_instance, Entry};
use crate::problem::{Problem, MAX_HEAD_DIM};

// ---- which kernel -----------------------------------------------------------------------

/// Query rows up to which decode is always chosen over the prefill kernel.
const MAX_DECODE_SEQ_Q: usize = 16;
/// Up to this many query rows decode is also chosen when the prefill grid is small...
const MAX_DECODE_SEQ_Q_UNDERFILLED: usize = 128;
/// ...that is, has at most this many blocks (half an H100/H200, which have 132 SMs).
const UNDERFILLED_PREFILL_BLOCKS: usize = 64;

/// Whether the decode kernel (src/cuda/decode.rs) handles the problem instead of the prefill
/// kernel.
///
/// Rule: `seq_q ≤ 16`; and for f16/bf16 also `seq_q ≤ 128` when the prefill grid
/// (batch · heads · ⌈seq_q / block_m⌉ blocks) has at most 64 blocks. The prefill kernel
/// parallelizes over query blocks only, so a short query leaves most SMs idle, and every block
/// reads K/V for its own q head; decode reads them once per kv head and splits the keys.
///
/// Measured crossover (lab/README.md, H200, bf16, D = 128, both kernels and torch in one run,
/// median µs): (1,32,8,sq,8192), prefill grid 32 blocks: prefill ≈ 321 for every sq ≤ 128,
/// decode 31 (sq 4), 36 (8), 50 (16), 78 (32), 135 (64), 241 (128). (8,32,8,sq,2048), prefill grid
/// 256 blocks: sq 16 decode 72 vs prefill 129; sq 32 138 vs 129; sq 64 271 vs 129.
/// f32 (decode on CUDA cores, prefill on CUDA cores) is not measured past sq = 16 and stays there.
pub(super) fn use_decode(problem: &Problem, dtype: Dtype) -> bool {
    // Decode instances go up to d256; larger head dims run on the prefill kernel.
    let decode = KernelKey { family: Family::Decode, dtype, head_dim: problem.head_dim, mods: false };
    if problem.head_dim > MAX_HEAD_DIM || instance(decode, Arch::Sm80).is_err() {
        return false;
    }
    if problem.seq_q <= MAX_DECODE_SEQ_Q {
        return true;
    }
    if dtype == Dtype::F32 || problem.seq_q > MAX_DECODE_SEQ_Q_UNDERFILLED {
        return false;
    }
    let key = KernelKey { family: Family::Fwd, dtype, head_dim: problem.head_dim, mods: false };
    match instance(key, Arch::Sm80) {
        Ok(prefill) => {
            let blocks = problem.batch * problem.heads * problem.seq_q.div_ceil(prefill.block_rows as usize);
            blocks <= UNDERFILLED_PREFILL_BLOCKS
        }
        Err(_) => false,
    }
}

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

// ---- decode splits ----------------------------------------------------------------------

/// Rows of one decode block (one mma m16 tile): `group · seq_q` rows are cut into groups of this.
pub(super) const DECODE_ROWS: usize = DECODE_BLOCK_ROWS as usize;
/// Keys one decode block advances per round: 4 warps × 16 keys. Splits are whole rounds.
const KEYS_PER_ROUND: usize = DECODE_KEYS_PER_ROUND as usize;
/// Above this many splits per tile, one block per SM instead of every resident block.
const MAX_SPLITS_ALL_SLOTS: usize = 16;
/// Each split takes at least this many rounds (256 keys) when the range has them: a short
/// cache is latency-bound, and fewer, longer split blocks leave fewer partials to merge.
/// Measured (H200, bf16, D = 128, session 23 call 4, 3 rounds alternating, after the lean
/// split kernel and combine), (1,32,8,1,2048) by splits, µs: 8 → 13.26 / 13.58 / 13.41,
/// 12 → 13.77-13.92, 16 (the rule before) → 13.78-13.95, 20 → 13.76-13.98, 24 → 13.81-13.85,
/// 32 → 15.80-16.29. (H100, session 11/16, before those kernels: 8 and 16 level.) Longer
/// caches are unchanged: at 4 096 keys 16 splits are 4 rounds each. Call 5 (same call, 2
/// rounds alternating): (1,32,8,1,2048) 13.5 / 13.6 against 13.9 / 13.9 µs (0.970), the other
/// decode rows within ±0.3 %.
const MIN_ROUNDS_PER_SPLIT: usize = 4;
/// The last block of a tile reads splits × rows partial rows (f32, the instance's head dim
/// each): at most this many.
const MAX_PARTIAL_ROWS: usize = 256;

/// With the separate merge launch (Hopper, src/cuda/decode.rs), the f16/bf16 split blocks of
/// tiles of at most this many rows store one partial per warp (`defer_combine` 2) instead of
/// merging their four warps first. Measured (H100, bf16, D = 128, session 20, same call, 3
/// rounds, lab/README.md), µs: 4-row tiles gain (sk 2048: 16.0 → 15.6; sk 32768: 66.6 → 65.8;
/// 64 tiles, sk 8192: 110.6 → 109.0); 16-row tiles (sq 4, sk 8192) lose, 28.5 → 30.4, from four
/// times the merge's loads. 8-row tiles (GQA 8:1, or 4:1 with sq 2) were not measured: the
/// cut sits between the two.
pub(super) const PER_WARP_PARTIALS_MAX_ROWS: usize = 8;

/// `FUSED_ATTN_DECODE_PARTIALS=block` (read once): every split launch with the combine stores
/// one partial per block (its four warps merged first), whatever the tile's rows; a diagnostic
/// switch for A/B runs of [`PER_WARP_PARTIALS_MAX_ROWS`] (any other value: the rule).
pub(super) fn forced_block_partials() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var("FUSED_ATTN_DECODE_PARTIALS").is_ok_and(|v| v.trim() == "block"))
}

/// How many splits of the union key range, in whole 64-key rounds, for `pairs` tiles of `rows`
/// query rows each, on `sms` SMs that each hold `blocks_per_sm` blocks. As many blocks as fit on
/// the GPU at once (rounded down, so that a grid that already fills it is not split into a
/// second partial wave); but when that gives more than 16 splits, as many blocks as SMs, and
/// never more than 256 partial rows per tile (the last block of a tile reads them all, on one
/// SM); at least 4 rounds per split where the range has them; no split without keys. Returns
/// (splits, keys per split).
///
/// Measured (H100, bf16, D = 128, lab/README.md), µs by splits: 8 tiles of 4 rows
/// (sk 32768: 16 → 65.8, 32 → 66.2; sk 2048: 16 → 14.8, 32 → 17.9) and of 16 rows (sq 4,
/// sk 8192: 16 → 31.6, 32 → 38.0) gain from one block per SM; 64 tiles of 4 rows (sk 8192:
/// 4 → 109.4, 8 → 115.4; 2 → 118.2 vs 4 → 110.8 in an earlier run) from two.
///
/// `FUSED_ATTN_DECODE_SPLITS=N` (read once) asks for N splits instead, within 1..=64 and the
/// key range's rounds: a diagnostic switch for A/B runs of this rule.
pub(super) fn split_keys(
    key_len: usize,
    pairs: usize,
    rows: usize,
    sms: usize,
    blocks_per_sm: usize,
) -> (usize, usize) {
    if key_len == 0 {
        return (1, 0);
    }
    let rounds = key_len.div_ceil(KEYS_PER_ROUND);
    let pairs = pairs.max(1);
    let mut splits = sms * blocks_per_sm.max(1) / pairs;
    if splits > MAX_SPLITS_ALL_SLOTS {
        splits = sms / pairs;
    }
    let splits = splits.min(MAX_PARTIAL_ROWS / rows.clamp(1, DECODE_ROWS));
    let splits = splits.min(rounds / MIN_ROUNDS_PER_SPLIT);
    let splits = forced_decode_splits().unwrap_or(splits).clamp(1, rounds);
    let keys_per_split = rounds.div_ceil(splits) * KEYS_PER_ROUND;
    (key_len.div_ceil(keys_per_split), keys_per_split)
}

/// `FUSED_ATTN_DECODE_SPLITS`, when set to a whole number (clamped to 1..=64).
fn forced_decode_splits() -> Option<usize> {
    static FORCED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| {
        std::env::var("FUSED_ATTN_DECODE_SPLITS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(|n| n.clamp(1, 64))
    })
}

// ---- prefill tile order -----------------------------------------------------------------

/// How many rounds of a grid's resident blocks the tail group of [`lightest_last_pairs`] covers.
const TAIL_ROUNDS: usize = 2;
/// The most K/V bytes the tail group's (batch, head) pairs may read (about two thirds of an
/// H100/H200's 50 MiB L2, four fifths of an A100's 40 MiB), so that they share the L2 while
/// they run side by side.
const TAIL_KV_BYTES: usize = 32 << 20;

/// How many of a dense prefill grid's last (batch, head) pairs take their query tiles heaviest
/// first across those pairs (`FattnParams::tail_groups`, kernels/common/grid.cuh
/// `query_block_tail`), or 0, for a grid whose blocks take (or are handed) its tiles in index
/// order, `round_blocks` at a time. The tiles go one head after another, heaviest first, so
/// that the blocks in flight share K/V in L2; under a right-bounded mask (causal, windows) the
/// last heads' heaviest tiles would then start last and the launch end on a tail of long tiles.
/// The last pairs, about [`TAIL_ROUNDS`] rounds' worth of tiles and at most [`TAIL_KV_BYTES`] of
/// K/V, go every pair's last (heaviest) query block first, then every pair's next, so that the
/// launch ends on the lightest. Masks without a right bound keep the plain order (there the
/// last query block is not the heaviest), as do packed batches.
pub(super) fn lightest_last_pairs(p: &Problem, round_blocks: usize, query_blocks: usize, elem_bytes: usize) -> usize {
    if p.window_right < 0 || p.packed().is_some() {
        return 0;
    }
    // K and V bytes of one q head's share of its kv head.
    let per_pair = 2 * p.seq_k * p.head_dim * elem_bytes / p.group_size().max(1);
    tail_group_count(round_blocks, query_blocks, p.batch * p.heads, per_pair)
}

/// The backward's [`lightest_last_pairs`]: how many of a dense backward grid's last groups
/// ((batch, kv head, kv split, column split), each `key_blocks` CTAs, heaviest first under a
/// causal mask: key block 0 sees every row) take their key blocks across those groups
/// (`FattnParams::tail_groups`, kernels/common/bwd_index.cuh `bwd_cta`), or 0. A group reads
/// the Q and dO rows of its `heads_per_group` q heads.
pub(super) fn lightest_last_groups(
    p: &Problem,
    round_blocks: usize,
    key_blocks: usize,
    groups: usize,
    heads_per_group: usize,
    elem_bytes: usize,
) -> usize {
    if p.window_right < 0 || p.packed().is_some() {
        return 0;
    }
    let per_group = 2 * p.seq_q * p.head_dim * elem_bytes * heads_per_group.max(1);
    tail_group_count(round_blocks, key_blocks, groups, per_group)
}

/// About [`TAIL_ROUNDS`] rounds of `round_blocks` worth of groups of `blocks_per_group` tiles,
/// at most [`TAIL_KV_BYTES`] of their `bytes_per_group`, at least 1, at most `groups`; 0 for
/// an empty grid.
fn tail_group_count(round_blocks: usize, blocks_per_group: usize, groups: usize, bytes_per_group: usize) -> usize {
    if round_blocks == 0 || blocks_per_group == 0 || groups == 0 {
        return 0;
    }
    let want = (TAIL_ROUNDS * round_blocks).div_ceil(blocks_per_group);
    want.min(TAIL_KV_BYTES / bytes_per_group.max(1)).max(1).min(groups)
}

// ---- backward splits --------------------------------------------------------------------

/// CTAs of the backward per kv head along its group of q heads. One CTA per (key block, kv
/// head) loops over the whole group and stores dK/dV directly; when that grid (`ctas`) is under
/// two waves of `resident` CTAs, the group is split (the smallest divisor that reaches two
/// waves, else the whole group) and dK/dV go through f32 accumulators. Not measured yet.
pub(super) fn bwd_kv_splits(ctas: usize, group: usize, resident: usize) -> usize {
    let target = 2 * resident;
    if group <= 1 || ctas >= target {
        return 1;
    }
    (2..=group).find(|s| group.is_multiple_of(*s) && ctas * s >= target).unwrap_or(group)
}

// ---- device facts, read once -------------------------------------------------------------

/// What the launches need to know about a device.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeviceInfo {
    pub compute_capability: (i32, i32),
    pub sms: u32,
    /// The most dynamic shared memory a block may opt into.
    pub smem_optin: u32,
}

/// A kernel ready to launch on one device.
pub(super) struct Prepared {
    pub func: CudaFunction,
    pub device: DeviceInfo,
    /// Blocks of it an SM holds at once (at the instance's largest shared memory).
    pub blocks_per_sm: u32,
    inst: &'static Instance,
}

impl Prepared {
    /// Errors when a launch with `bytes` of dynamic shared memory cannot run on the device.
    pub fn check_smem(&self, bytes: u32) -> Result<()> {
        let optin = self.device.smem_optin;
        if bytes > optin {
            bail!("fused-attn cuda: {} needs {bytes} bytes of shared memory, the device allows {optin}", self.inst.name)
        }
        Ok(())
    }
}

/// Facts of one loaded function: its shared-memory attribute is set and its occupancy known.
#[derive(Debug, Clone, Copy)]
struct FuncFacts {
    blocks_per_sm: u32,
}

/// One candle device (its modules, so its functions, belong to it).
struct DeviceEntry {
    /// The device's stream; when nothing holds it any more the device is gone.
    stream: Weak<CudaStream>,
    info: DeviceInfo,
    /// By `CUfunction` handle: a handle is one loaded function of this device's modules.
    funcs: HashMap<usize, FuncFacts>,
}

/// Per candle device, keyed by its id (never reused in a process).
static DEVICES: Mutex<Option<HashMap<DeviceId, DeviceEntry>>> = Mutex::new(None);

/// Runs `f` on the device table. A panic elsewhere while holding the lock left nothing
/// half-written that matters (entries are inserted whole), so a poisoned lock is used as is.
fn with_devices<R>(f: impl FnOnce(&mut HashMap<DeviceId, DeviceEntry>) -> R) -> R {
    let mut guard = DEVICES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// Loads `inst` on `dev` and readies it for launches. The first call per device reads its
/// attributes; the first call per function sets its dynamic shared-memory attribute (to the
/// instance's largest need, within the device's opt-in limit) and reads its occupancy. Every
/// later call is a lookup. Refuses devices older than the instance's architecture, before
/// loading anything.
pub(super) fn prepare(dev: &CudaDevice, inst: &'static Instance) -> Result<Prepared> {
    prepare_entry(dev, inst, Entry::Dense)
}

/// [`prepare`] for one entry point of `inst` (its packed one: `Entry::Packed`).
pub(super) fn prepare_entry(dev: &CudaDevice, inst: &'static Instance, entry: Entry) -> Result<Prepared> {
    let info = device_facts(dev)?;
    let (major, minor) = info.compute_capability;
    if !inst.arch.runs_on(info.compute_capability) {
        let (need_major, need_minor) = inst.arch.min_compute_capability();
        bail!(
            "fused-attn cuda: {} needs compute capability {need_major}.{need_minor}{} (sm_{need_major}{need_minor}), \
             this device has {major}.{minor}",
            inst.name,
            if inst.arch == Arch::Sm90a { " exactly" } else { " or newer" }
        )
    }
    // Loaded outside the lock: the first load of a module JIT-compiles its PTX.
    let func = load_instance(dev, inst, entry)?;
    let handle = func.cu_function() as usize;
    let known = with_devices(|devices| devices.get(&dev.id()).and_then(|d| d.funcs.get(&handle).copied()));
    let facts = match known {
        Some(facts) => facts,
        None => {
            // Two threads may both get here for one function: they set the same value.
            let need = if entry.is_large() { bwd_large_smem(inst) } else { max_smem_bytes(inst) };
            let bytes = need.min(info.smem_optin);
            func.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)
                .w()?;
            let blocks_per_sm =
                func.occupancy_max_active_blocks_per_multiprocessor(inst.threads, bytes as usize, None).w()?;
            let facts = FuncFacts { blocks_per_sm };
            with_devices(|devices| {
                if let Some(d) = devices.get_mut(&dev.id()) {
                    d.funcs.insert(handle, facts);
                }
            });
            facts
        }
    };
    Ok(Prepared { func, device: info, blocks_per_sm: facts.blocks_per_sm, inst })
}

/// The device's facts (compute capability, SMs, opt-in shared memory), read once per device.
pub(super) fn device_facts(dev: &CudaDevice) -> Result<DeviceInfo> {
    let stream = dev.cuda_stream();
    if let Some(info) = with_devices(|devices| devices.get(&dev.id()).map(|d| d.info)) {
        return Ok(info);
    }
    let info = device_info(&stream)?;
    with_devices(|devices| {
        devices.retain(|_, d| d.stream.strong_count() > 0);
        devices.entry(dev.id()).or_insert(DeviceEntry { stream: Arc::downgrade(&stream), info, funcs: HashMap::new() });
    });
    Ok(info)
}

/// The most dynamic shared memory any launch of `inst` asks for.
fn max_smem_bytes(inst: &Instance) -> u32 {
    match inst.smem {
        Smem::Bytes(b) => b,
        Smem::PerHeadDim(f) => (1..=inst.head_dim).map(f).max().unwrap_or(0),
    }
}

fn device_info(stream: &Arc<CudaStream>) -> Result<DeviceInfo> {
    let ctx = stream.context();
    let compute_capability = ctx.compute_capability().w()?;
    let sms = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).w()?;
    let optin = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).w()?;
    Ok(DeviceInfo { compute_capability, sms: sms.max(0) as u32, smem_optin: optin.max(0) as u32 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::SeqLayout;

    #[test]
    fn backward_grids_end_on_their_lightest_key_blocks() {
        let causal = |seq: usize, heads: usize, window_right: i64| Problem {
            seq_k: seq,
            window_right,
            ..problem(16, seq, heads, heads)
        };
        // (16,16,2048,d128) causal, bf16: 16 key blocks per group of one head, 132 SMs × 2
        // resident CTAs: two rounds would be 33 groups, but 32 of 1 MiB (Q and dO) fill the
        // L2 bound.
        assert_eq!(lightest_last_groups(&causal(2048, 16, 0), 264, 16, 256, 1, 2), 32);
        // (16,16,512,d128) in f8-sized elements: 4 key blocks a group, 128 KiB each: the
        // rounds bound, 132 (the L2 one would allow 256).
        assert_eq!(lightest_last_groups(&causal(512, 16, 0), 264, 4, 256, 1, 1), 132);
        // Never more groups than the grid has; the L2 bound: 32 MiB of Q and dO.
        assert_eq!(lightest_last_groups(&causal(2048, 16, 0), 264, 16, 20, 1, 2), 20);
        assert_eq!(lightest_last_groups(&causal(65536, 16, 0), 264, 512, 256, 1, 2), 1);
        // No right bound: the plain order.
        assert_eq!(lightest_last_groups(&causal(2048, 16, -1), 264, 16, 256, 1, 2), 0);
        // The forward's pairs, from the same count: (16,16,2048,d128) causal on 128-row tiles.
        assert_eq!(lightest_last_pairs(&causal(2048, 16, 0), 132, 16, 2), 17);
    }

    #[test]
    fn splits_fill_the_sms_in_whole_rounds() {
        // (1,32,8,1,32768,128): 8 tiles of 4 rows, 132 SMs × 2 blocks: one block per SM.
        let (splits, keys) = split_keys(32768, 8, 4, 132, 2);
        assert_eq!(keys % KEYS_PER_ROUND, 0);
        assert!(splits * keys >= 32768 && (splits - 1) * keys < 32768);
        assert_eq!(splits, 16);
        // (8,32,8,1,8192,128): 64 tiles: every resident slot.
        assert_eq!(split_keys(8192, 64, 4, 132, 2), (4, 2048));
        // Many pairs: no split.
        assert_eq!(split_keys(4096, 256, 4, 132, 2), (1, 4096));
        // (1,32,8,1,2048,128): a short cache, at least 4 rounds (256 keys) per split.
        assert_eq!(split_keys(2048, 8, 4, 132, 2), (8, 256));
        // (1,32,8,4,8192,128): 8 tiles of 16 rows, 16 splits of 8 rounds, as before.
        assert_eq!(split_keys(8192, 8, 16, 132, 2), (16, 512));
        // Short ranges never give a split without keys.
        let (splits, keys) = split_keys(100, 1, 1, 132, 2);
        assert!(keys >= 64 && (splits - 1) * keys < 100);
        assert_eq!(split_keys(0, 4, 4, 132, 2), (1, 0));
        // One pair on a large GPU: the last block's partial rows are capped.
        let (splits, _) = split_keys(1 << 20, 1, 16, 1000, 2);
        assert_eq!(splits, MAX_PARTIAL_ROWS / 16);
        let (splits, _) = split_keys(1 << 20, 1, 1, 1000, 2);
        assert!(splits <= MAX_PARTIAL_ROWS);
    }

    #[test]
    fn bwd_kv_splits_reach_two_waves_or_the_whole_group() {
        // Enough CTAs: no split.
        assert_eq!(bwd_kv_splits(4096, 4, 132), 1);
        // No group to split.
        assert_eq!(bwd_kv_splits(10, 1, 132), 1);
        // (4, 9 heads, 3 kv heads, 2048, d64): 16 key blocks · 3 · 4 = 192 CTAs on 132 slots.
        assert_eq!(bwd_kv_splits(192, 3, 132), 3);
        // Group 4, 128 CTAs: 2 gives 256 < 264, 4 gives 512.
        assert_eq!(bwd_kv_splits(128, 4, 132), 4);
        // Group 6, 100 CTAs, 100 slots: 2 reaches 200.
        assert_eq!(bwd_kv_splits(100, 6, 100), 2);
    }

    fn problem(batch: usize, seq_q: usize, heads: usize, kv_heads: usize) -> Problem {
        Problem {
            batch,
            seq_q,
            seq_k: 8192,
            heads,
            kv_heads,
            head_dim: 128,
            scale: 0.1,
            softcap: 0.0,
            window_left: -1,
            window_right: 0,
            has_alibi: false,
            layout: SeqLayout::Dense,
            want_lse: false,
            mm_ranges: None,
        }
    }

    #[test]
    fn dispatch_follows_the_measured_crossover() {
        // Decode steps and short speculative steps: always.
        assert!(use_decode(&problem(8, 1, 32, 8), Dtype::BF16));
        assert!(use_decode(&problem(32, 16, 32, 8), Dtype::F32));
        // Batch 1: the prefill grid has 32 blocks up to sq = 128, decode measured faster.
        assert!(use_decode(&problem(1, 128, 32, 8), Dtype::F16));
        assert!(!use_decode(&problem(1, 129, 32, 8), Dtype::F16));
        // Batch 8: 256 prefill blocks, prefill measured faster from sq = 32.
        assert!(!use_decode(&problem(8, 32, 32, 8), Dtype::BF16));
        assert!(!use_decode(&problem(1, 32, 32, 8), Dtype::F32));
        // Head dims above the decode instances' 256 take the prefill kernel.
        let wide = Problem { head_dim: 512, ..problem(8, 1, 32, 8) };
        assert!(!use_decode(&wide, Dtype::BF16) && !use_decode(&wide, Dtype::F32));
    }

    #[test]
    fn instances_cover_every_head_dim() {
        // The decode's combine launch is looked up by its split instance's head dim instead
        // (decode::combine_instance; checked below).
        for family in Family::ALL.into_iter().filter(|f| *f != Family::DecodeCombine) {
            for dtype in [Dtype::BF16, Dtype::F16, Dtype::F32] {
                for mods in [false, true] {
                    let key = |head_dim| KernelKey { family, dtype, head_dim, mods };
                    // Prefill and the backward hold every head dim; decode up to 256
                    // (use_decode sends larger ones to prefill).
                    let max_d = if family == Family::Decode { 256 } else { MAX_HEAD_DIM };
                    for d in 1..=max_d {
                        let inst = instance(key(d), Arch::Sm80).unwrap();
                        let smem = inst.smem_bytes(d as u32);
                        assert!(inst.head_dim as usize >= d && smem <= 227 * 1024, "{} d {d}: {smem} bytes", inst.name);
                        // The next smaller instance would not hold d: the smallest that does.
                        // (Among the same arch's instances: Hopper ones have head dims of their own.)
                        assert!(INSTANCES.iter().all(|i| i.family != family
                            || i.arch != Arch::Sm80
                            || i.dtype != dtype
                            || !i.variant.serves(mods)
                            || i.head_dim >= inst.head_dim
                            || (i.head_dim as usize) < d));
                        if family == Family::Decode {
                            assert_eq!(inst.block_rows as usize, DECODE_ROWS);
                            assert_eq!(inst.key_block as usize, KEYS_PER_ROUND);
                        }
                    }
                    assert!(instance(key(max_d + 1), Arch::Sm80).is_err());
                }
            }
        }
        // Every decode instance's partials have a combine launch of the same dtype and head dim.
        for split in INSTANCES.iter().filter(|i| i.family == Family::Decode) {
            let key = KernelKey { family: Family::DecodeCombine, dtype: split.dtype, head_dim: 0, mods: false };
            let combine = instance(KernelKey { head_dim: split.head_dim as usize, ..key }, Arch::Sm90a).unwrap();
            assert_eq!(combine.head_dim, split.head_dim, "{}", split.name);
            assert!(instance(KernelKey { mods: true, head_dim: split.head_dim as usize, ..key }, Arch::Sm90a).is_ok());
        }
        // The bf16 D = 128 decode instance leaves room for two resident blocks per SM (228 KB).
        let key = KernelKey { family: Family::Decode, dtype: Dtype::BF16, head_dim: 128, mods: false };
        assert!(2 * (instance(key, Arch::Sm80).unwrap().smem_bytes(128) + 1024) <= 228 * 1024);
        // Prefill d128 takes the d128 tile, d100 too; d129 the d256 one.
        let fwd = |head_dim| KernelKey { family: Family::Fwd, dtype: Dtype::BF16, head_dim, mods: false };
        assert_eq!(instance(fwd(128), Arch::Sm80).unwrap().name, "fattn_fwd_bf16_d128");
        assert_eq!(instance(fwd(100), Arch::Sm80).unwrap().name, "fattn_fwd_bf16_d128");
        assert_eq!(instance(fwd(129), Arch::Sm80).unwrap().name, "fattn_fwd_bf16_d256");
    }
}
