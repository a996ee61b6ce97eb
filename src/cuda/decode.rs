//! Flash-decoding: the CUDA path for a few query rows against a long KV cache
//! (kernels/decode_sm80.cu).
//!
//! The key range that any query row sees is split across thread blocks, so that a decode step
//! (sq = 1) with few (batch, kv head) pairs still streams K and V from every SM. The q heads
//! of one kv head and the sq query rows share a block (one m16 tile of rows), so K and V are
//! read once per kv head. Each block writes an unnormalized f32 partial (acc, max, sum) and
//! counts itself in on a per-tile counter; the last split block of a tile merges the partials
//! into the output, in the same launch, and zeroes the counter again. One split writes the
//! output directly. f16/bf16 run on mma.sync; f32 runs the same blocks on CUDA cores (no TF32).
//!
//! Measured on an H100 (README, bf16, D = 128, criterion medians with torch in the same run):
//! 1.01-1.05× cuDNN's time on the sq = 1 bench rows, 3.1× faster than cuDNN at sq = 4.

use std::cell::RefCell;
use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::sys::CUdevice_attribute;
use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaDevice, WrapErr};
use candle_core::{bail, CudaStorage, DType, Layout, Result, Tensor};
use half::{bf16, f16};

use super::instances::{Arch, Family, KernelKey, DECODE_BLOCK_ROWS, DECODE_KEYS_PER_ROUND};
use super::params::FattnParams;
use super::{
    alibi_slopes_ptr, common_params, dev_tensor, heuristics, kernel_dtype, load_instance, set_dynamic_smem, to_i32,
    KernelDtype,
};
use crate::problem::Problem;

/// Query rows up to which decode is always chosen over the prefill kernel.
const MAX_DECODE_SEQ_Q: usize = 16;
/// Up to this many query rows decode is also chosen when the prefill grid is small...
const MAX_DECODE_SEQ_Q_UNDERFILLED: usize = 128;
/// ...that is, has at most this many blocks (half an H100/H200, which have 132 SMs).
const UNDERFILLED_PREFILL_BLOCKS: usize = 64;

/// Rows of one block (one mma m16 tile): `group · seq_q` rows are cut into groups of this.
const BLOCK_ROWS: usize = DECODE_BLOCK_ROWS as usize;
/// Keys one block advances per round: 4 warps × 16 keys. Splits are whole rounds.
const KEYS_PER_ROUND: usize = DECODE_KEYS_PER_ROUND as usize;
/// Above this many splits per tile, one block per SM instead of every resident block.
const MAX_SPLITS_ALL_SLOTS: usize = 16;
/// The last block of a tile reads splits × rows partial rows (f32, the instance's head dim
/// each): at most this many.
const MAX_PARTIAL_ROWS: usize = 256;

/// Whether `forward` (below) handles the problem instead of the prefill kernel.
///
/// Rule: `seq_q ≤ 16`; and for f16/bf16 also `seq_q ≤ 128` when the prefill grid
/// (batch · heads · ⌈seq_q / block_m⌉ blocks) has at most 64 blocks. The prefill kernel
/// parallelizes over query blocks only, so a short query leaves most SMs idle, and every block
/// reads K/V for its own q head; decode reads them once per kv head and splits the keys.
///
/// Measured crossover (kernels/lab/README.md, H200, bf16, D = 128, both kernels and torch in one
/// run, median µs): (1,32,8,sq,8192), prefill grid 32 blocks: prefill ≈ 321 for every sq ≤ 128,
/// decode 31 (sq 4), 36 (8), 50 (16), 78 (32), 135 (64), 241 (128). (8,32,8,sq,2048), prefill grid
/// 256 blocks: sq 16 decode 72 vs prefill 129; sq 32 138 vs 129; sq 64 271 vs 129.
/// f32 (decode on CUDA cores, prefill on CUDA cores) is not measured past sq = 16 and stays there.
pub(super) fn applies(problem: &Problem, dtype: DType) -> bool {
    if problem.head_dim > crate::problem::MAX_HEAD_DIM || !matches!(dtype, DType::F16 | DType::BF16 | DType::F32) {
        return false;
    }
    if problem.seq_q <= MAX_DECODE_SEQ_Q {
        return true;
    }
    if dtype == DType::F32 || problem.seq_q > MAX_DECODE_SEQ_Q_UNDERFILLED {
        return false;
    }
    let Some(dtype) = kernel_dtype(dtype) else { return false };
    let key = KernelKey { family: Family::Fwd, dtype, head_dim: problem.head_dim, mods: false };
    match heuristics::instance(key, Arch::Sm80) {
        Ok(prefill) => {
            let blocks = problem.batch * problem.heads * problem.seq_q.div_ceil(prefill.block_rows as usize);
            blocks <= UNDERFILLED_PREFILL_BLOCKS
        }
        Err(_) => false,
    }
}

/// How many splits of the union key range, in whole 64-key rounds, for `pairs` tiles of `rows`
/// query rows each. As many blocks as fit on the GPU at once (rounded down, so that a grid that
/// already fills it is not split into a second partial wave); but when that gives more than
/// 16 splits, as many blocks as SMs, and never more than 256 partial rows per tile (the last
/// block of a tile reads them all, on one SM); no split without keys.
///
/// Measured (H100, bf16, D = 128, kernels/lab/README.md), µs by splits: 8 tiles of 4 rows
/// (sk 32768: 16 → 65.8, 32 → 66.2; sk 2048: 16 → 14.8, 32 → 17.9) and of 16 rows (sq 4,
/// sk 8192: 16 → 31.6, 32 → 38.0) gain from one block per SM; 64 tiles of 4 rows (sk 8192:
/// 4 → 109.4, 8 → 115.4; 2 → 118.2 vs 4 → 110.8 in an earlier run) from two.
fn split_keys(key_len: usize, pairs: usize, rows: usize, sms: usize, blocks_per_sm: usize) -> (usize, usize) {
    if key_len == 0 {
        return (1, 0);
    }
    let rounds = key_len.div_ceil(KEYS_PER_ROUND);
    let pairs = pairs.max(1);
    let mut splits = sms * blocks_per_sm.max(1) / pairs;
    if splits > MAX_SPLITS_ALL_SLOTS {
        splits = sms / pairs;
    }
    let splits = splits.min(MAX_PARTIAL_ROWS / rows.clamp(1, BLOCK_ROWS)).clamp(1, rounds);
    let keys_per_split = rounds.div_ceil(splits) * KEYS_PER_ROUND;
    (key_len.div_ceil(keys_per_split), keys_per_split)
}

/// The decode forward (`applies` said yes). `alibi` is `(batch, heads)` f32.
pub(super) fn forward(
    p: &Problem,
    q: (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<CudaStorage> {
    match q.0.dtype() {
        DType::BF16 => launch::<bf16>(p, q, k, v, alibi),
        DType::F16 => launch::<f16>(p, q, k, v, alibi),
        DType::F32 => launch::<f32>(p, q, k, v, alibi),
        dt => bail!("fused-attn decode: unsupported dtype {dt:?}; supported: f32, f16, bf16"),
    }
}

/// A split launch's scratch on one stream: `counters` tile arrival counters (u32) at the start,
/// then room for `partial_words` f32 partials (acc, then (max, sum) pairs).
struct Workspace {
    buf: CudaSlice<u32>,
    counters: usize,
}

impl Workspace {
    /// Where the partials start: the counters rounded up to 16 bytes (the combine reads float4).
    fn partials_offset(counters: usize) -> usize {
        counters.next_multiple_of(4)
    }
    fn fits(&self, counters: usize, partial_words: usize) -> bool {
        counters <= self.counters && Self::partials_offset(self.counters) + partial_words <= self.buf.len()
    }
}

thread_local! {
    /// One split-launch workspace per stream this thread has launched a split decode on. The
    /// counters are zeroed once, when the buffer is allocated: every launch leaves them at zero
    /// (the last block of each tile resets its own). The partials need no zeroing: every split
    /// block writes its slots before the last block of its tile reads them. Launches that share
    /// a workspace run in order: they come from one thread and one `CudaStream`, and a candle
    /// device's stream is either its own stream or the calling thread's per-thread default
    /// stream (`Device::new_cuda`), so launches from different threads, which may run
    /// concurrently, never share one. Its size is bounded: `split_keys` keeps splits × tiles
    /// within the blocks resident at once and a tile has ≤ 16 rows, so there are at most 16
    /// partial rows per resident block (about 2.2 MB of partials on an H100, every instance).
    static WORKSPACES: RefCell<Vec<Workspace>> = const { RefCell::new(Vec::new()) };
}

/// Calls `launch` with the device addresses of at least `counters` zeroed tile counters and
/// `partial_words` f32 words of partials for `stream` (`dev`'s stream), allocating or growing
/// this thread's workspace for it first. Reusing it saves two allocations and two frees per
/// decode step. The buffer's stream guard is held until `launch` has queued the kernel.
fn with_workspace<R>(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    counters: usize,
    partial_words: usize,
    launch: impl FnOnce(u64, u64) -> Result<R>,
) -> Result<R> {
    WORKSPACES.with(|cell| {
        let Ok(mut spaces) = cell.try_borrow_mut() else {
            bail!("fused-attn decode: workspace re-entered on one thread")
        };
        // A buffer whose stream only it still holds belongs to a device that is gone.
        spaces.retain(|w| Arc::strong_count(w.buf.stream()) > 1);
        let at = match spaces.iter().position(|w| Arc::ptr_eq(w.buf.stream(), stream)) {
            Some(at) if spaces[at].fits(counters, partial_words) => at,
            found => {
                // Grown to cover this call and every earlier one on the stream. Zeroed on
                // `stream`, before any kernel that uses it; the buffer it replaces is freed on
                // that stream after the kernels queued so far.
                let (old_counters, old_partials) = found.map_or((0, 0), |at| {
                    let old = &spaces[at];
                    (old.counters, old.buf.len() - Workspace::partials_offset(old.counters))
                });
                let counters = counters.max(old_counters).next_power_of_two().max(256);
                let len = Workspace::partials_offset(counters) + partial_words.max(old_partials);
                let fresh = Workspace { buf: dev.alloc_zeros::<u32>(len)?, counters };
                match found {
                    Some(at) => {
                        spaces[at] = fresh;
                        at
                    }
                    None => {
                        spaces.push(fresh);
                        spaces.len() - 1
                    }
                }
            }
        };
        let space = &mut spaces[at];
        let offset = Workspace::partials_offset(space.counters) as u64 * 4;
        let (ptr, _guard) = space.buf.device_ptr_mut(stream);
        launch(ptr, ptr + offset)
    })
}

fn launch<T: KernelDtype>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    (k, kl): (&CudaStorage, &Layout),
    (v, vl): (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
) -> Result<CudaStorage> {
    let dev = &q.device;
    let stream = dev.cuda_stream();
    // The decode kernels compute any scale in their plain instances; `_mod` adds softcap/ALiBi.
    let mods = p.softcap > 0.0 || p.has_alibi;
    let inst = heuristics::instance(
        KernelKey { family: Family::Decode, dtype: T::DTYPE, head_dim: p.head_dim, mods },
        Arch::Sm80,
    )?;
    let (d_inst, smem, name) = (inst.head_dim as usize, inst.smem_bytes(inst.head_dim), inst.name);
    let func = load_instance(dev, inst)?;
    set_dynamic_smem(&func, &stream, smem, name)?;

    let sms = stream.context().attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).w()?;
    let blocks_per_sm = func.occupancy_max_active_blocks_per_multiprocessor(inst.threads, smem as usize, None).w()?;
    if blocks_per_sm == 0 {
        bail!("fused-attn decode: {name} cannot be resident with {smem} bytes of shared memory")
    }

    let group = p.group_size();
    let row_groups = (group * p.seq_q).div_ceil(BLOCK_ROWS);
    // Rows' key ranges grow with the row: the union is [lo(0), hi(sq - 1)).
    let key_begin = p.key_range(0).0;
    let key_end = p.key_range(p.seq_q - 1).1.max(key_begin);
    let pairs = p.batch * p.kv_heads * row_groups;
    let tile_rows = (group * p.seq_q).min(BLOCK_ROWS);
    let (num_splits, keys_per_split) =
        split_keys(key_end - key_begin, pairs, tile_rows, sms.max(1) as usize, blocks_per_sm as usize);
    let grid_y = p.kv_heads * row_groups;
    if p.batch > 65535 || grid_y > 65535 {
        bail!("fused-attn decode: grid too large: batch {} and kv_heads · row groups {grid_y} must be ≤ 65535", p.batch)
    }

    let elem = std::mem::size_of::<T>();
    let (qt, kt, vt) =
        (dev_tensor::<T>(q, ql, &stream)?, dev_tensor::<T>(k, kl, &stream)?, dev_tensor::<T>(v, vl, &stream)?);
    let rows_total = p.batch * p.seq_q * p.heads;
    // SAFETY: every element of the (batch, seq_q, heads, head_dim) output is written: each row
    // by the one block that owns it (one split) or by the last split block of its tile
    // (several), zeros for rows that see no key.
    let mut out = unsafe { dev.alloc::<T>(rows_total * p.head_dim) }?;
    // Partials of a split launch: [splits][rows_total][d_inst] acc, then [splits][rows_total][2].
    let partial_acc_words = num_splits * rows_total * d_inst;
    let partial_words = partial_acc_words + num_splits * rows_total * 2;

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    {
        let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
        let alibi = alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr);
        let params = FattnParams {
            row_groups: to_i32(row_groups, "row groups")?,
            key_begin: to_i32(key_begin, "first visible key")?,
            key_end: to_i32(key_end, "last visible key")?,
            keys_per_split: to_i32(keys_per_split, "keys per split")?,
            num_splits: to_i32(num_splits, "splits")?,
            ..common_params(p, [&qt, &kt, &vt], o_ptr, alibi, elem)?
        };
        let cfg = LaunchConfig {
            grid_dim: (num_splits as u32, grid_y as u32, p.batch as u32),
            block_dim: (inst.threads, 1, 1),
            shared_mem_bytes: smem,
        };
        let launch_split = |params: FattnParams| -> Result<()> {
            let mut builder = stream.launch_builder(&func);
            builder.arg(&params);
            // SAFETY: the kernel's one argument is `FattnParams` by value, matching its C++
            // signature (every offset and the size asserted on both sides). Its pointers are live device allocations
            // held by q, k, v, `out`, the workspace (with splits: `pairs` zero tile counters, one
            // per (batch, grid y) tile, and `partial_words` f32 that every split block writes
            // before the last block of its tile reads them) and the alibi storage for the whole
            // call; the strides and sizes describe them (validated by `crate::problem::validate`), and
            // the grid is (splits, kv heads × row groups, batch) as the kernel indexes it.
            unsafe { builder.launch(cfg) }.w()?;
            Ok(())
        };
        if num_splits > 1 {
            with_workspace(dev, &stream, pairs, partial_words, |counters, partials| {
                launch_split(FattnParams {
                    tile_counters: counters,
                    partial_o: partials,
                    partial_ml: partials + partial_acc_words as u64 * 4,
                    ..params
                })
            })?;
        } else {
            launch_split(params)?;
        }
    }
    drop(alibi_ptr);
    drop((qt, kt, vt));
    Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
}

#[cfg(test)]
mod tests {
    use super::super::instances::Dtype;
    use super::*;

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
            layout: crate::problem::SeqLayout::Dense,
            want_lse: false,
        }
    }

    #[test]
    fn dispatch_follows_the_measured_crossover() {
        // Decode steps and short speculative steps: always.
        assert!(applies(&problem(8, 1, 32, 8), DType::BF16));
        assert!(applies(&problem(32, 16, 32, 8), DType::F32));
        // Batch 1: the prefill grid has 32 blocks up to sq = 128, decode measured faster.
        assert!(applies(&problem(1, 128, 32, 8), DType::F16));
        assert!(!applies(&problem(1, 129, 32, 8), DType::F16));
        // Batch 8: 256 prefill blocks, prefill measured faster from sq = 32.
        assert!(!applies(&problem(8, 32, 32, 8), DType::BF16));
        assert!(!applies(&problem(1, 32, 32, 8), DType::F32));
    }

    #[test]
    fn instances_cover_every_head_dim() {
        for dtype in [Dtype::BF16, Dtype::F16, Dtype::F32] {
            for mods in [false, true] {
                let key = |head_dim| KernelKey { family: Family::Decode, dtype, head_dim, mods };
                for d in 1..=256 {
                    let inst = heuristics::instance(key(d), Arch::Sm80).unwrap();
                    let smem = inst.smem_bytes(inst.head_dim);
                    assert!(inst.head_dim as usize >= d && smem <= 227 * 1024, "{dtype:?} d {d}: {smem} bytes");
                    assert_eq!(inst.block_rows as usize, BLOCK_ROWS);
                    assert_eq!(inst.key_block as usize, KEYS_PER_ROUND);
                }
                assert!(heuristics::instance(key(257), Arch::Sm80).is_err());
            }
        }
        // The bf16 D = 128 instance leaves room for two resident blocks per SM (228 KB).
        let key = KernelKey { family: Family::Decode, dtype: Dtype::BF16, head_dim: 128, mods: false };
        assert!(2 * (heuristics::instance(key, Arch::Sm80).unwrap().smem_bytes(128) + 1024) <= 228 * 1024);
    }
}
