//! Flash-decoding: the CUDA path for a few query rows against a long KV cache
//! (kernels/decode_sm80.cu).
//!
//! The key range that any query row sees is split across thread blocks, so that a decode step
//! (sq = 1) with few (batch, kv head) pairs still streams K and V from every SM. The q heads
//! of one kv head and the sq query rows share a block (one m16 tile of rows), so K and V are
//! read once per kv head. Each block writes an unnormalized f32 partial (acc, max, sum) and
//! counts itself in on a per-tile counter; the last split block of a tile merges the partials
//! into the output, in the same launch, and zeroes the counter again. One split writes the
//! output directly. On compute capability 9.0 a second launch merges the splits instead
//! (kernels/decode_sm90.cu), from one partial per block or, for tiles of few rows, one per warp. f16/bf16 run on mma.sync; f32 runs the same blocks on CUDA cores (no TF32).
//!
//! When it runs instead of the prefill kernel, and how many splits: src/cuda/heuristics.rs.
//!
//! Measured on an H100 (README, bf16, D = 128, criterion medians with torch in the same run):
//! 1.01-1.05× cuDNN's time on the sq = 1 bench rows, 3.1× faster than cuDNN at sq = 4.

use candle_core::cuda_backend::cudarc::driver::{CudaViewMut, DevicePtrMut, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaDevice, WrapErr};
use candle_core::{bail, CudaStorage, Layout, Result, Tensor};

use super::heuristics::{self, DECODE_ROWS};
use super::instances::{Arch, Dtype, Family, Instance, KernelKey, DECODE_KEYS_PER_ROUND, DECODE_THREADS, SOURCES};
use super::params::FattnParams;
use super::pdl::launch_dependent;
use super::workspace::with_workspace;
use super::{alibi_slopes_ptr, common_params, dev_qkv, query_rows, to_i32, with_packed, Entry, KernelDtype, OutBuf};
use crate::cuda_kernels::{cuda_kernels, record_decode_combine, CudaKernels};
use crate::problem::Problem;

/// The keys the splits must cover, `[key_begin, key_end)`. Dense: the union of the rows'
/// ranges, `[lo(0), hi(sq - 1))`. Packed: each block finds its sequence's own range in the
/// kernel (its first key rounded down to 64, see `block_keys` in kernels/decode_sm80.cu), so
/// the splits cover the longest of those: `[0, longest)`.
fn split_range(p: &Problem) -> (usize, usize) {
    match p.packed() {
        None => {
            let key_begin = p.key_range(0).0;
            (key_begin, p.key_range(p.seq_q - 1).1.max(key_begin))
        }
        Some(pk) => {
            let longest = (0..pk.batch())
                .filter(|&b| pk.len_q(b) > 0)
                .map(|b| {
                    let seq = p.sequence(b);
                    let lo = seq.key_range(0).0 / KEYS_PER_ROUND * KEYS_PER_ROUND;
                    seq.key_range(seq.seq_q - 1).1.saturating_sub(lo)
                })
                .max()
                .unwrap_or(0);
            (0, longest)
        }
    }
}

/// Block-table entries a paged decode block stages in shared memory (`kSplitPages` in
/// kernels/decode_sm80.cu; a block that needs more traps).
const DECODE_SPLIT_PAGES: usize = 512;

/// Splits of a paged launch: `keys_per_split` lowered, in whole rounds, until a split's keys
/// span at most `DECODE_SPLIT_PAGES` pages wherever it starts (`keys_per_split / page + 2`
/// pages at worst). Returns `(splits, keys_per_split)` covering `key_len` keys.
fn paged_split(key_len: usize, keys_per_split: usize, page: usize) -> (usize, usize) {
    let most = ((DECODE_SPLIT_PAGES - 2) * page.max(1)) / KEYS_PER_ROUND * KEYS_PER_ROUND;
    let keys_per_split = keys_per_split.min(most).max(KEYS_PER_ROUND);
    (key_len.div_ceil(keys_per_split).max(1), keys_per_split)
}

/// The separate combine launch (kernels/decode_sm90.cu) that merges the partials of `split`, a
/// decode instance, on `dev`; `None` where the split kernel merges them itself: GPUs other than
/// compute capability 9.0, calls forced onto the sm_80 kernels, builds without sm_90a code
/// (`FUSED_ATTN_CUDA_ARCHS`).
fn combine_instance(dev: &CudaDevice, split: &Instance) -> Result<Option<&'static Instance>> {
    if cuda_kernels()? == CudaKernels::Sm80
        || !Arch::Sm90a.runs_on(heuristics::device_facts(dev)?.compute_capability)
        || !super::has_code(SOURCES.iter().position(|s| s.families.contains(&Family::DecodeCombine)))
    {
        return Ok(None);
    }
    let key =
        KernelKey { family: Family::DecodeCombine, dtype: split.dtype, head_dim: split.head_dim as usize, mods: false };
    let combine = heuristics::instance(key, Arch::Sm90a)?;
    // Its items index partial rows of the split instance's width.
    if combine.head_dim != split.head_dim {
        bail!(
            "fused-attn decode: {} merges rows of {} dims, {} stores {}",
            combine.name,
            combine.head_dim,
            split.name,
            split.head_dim
        )
    }
    Ok(Some(combine))
}

/// Blocks of the combine launch per tile: the merge rounds of a tile of `tile_rows` rows in
/// `merge_split_partials` (kernels/decode_sm80.cu): items of 4 dims of a row, `lanes` threads per
/// item (doubled while twice the items still fit the block, and, with per-warp partials
/// (`per_warp`), while a lane would take more than 4 of the `partials`), a round
/// is `threads / lanes` items.
fn combine_rounds(tile_rows: usize, head_dim: usize, threads: usize, partials: usize, per_warp: bool) -> usize {
    const LANE_PARTIALS: usize = 4;
    let items = tile_rows * head_dim / 4;
    let mut lanes = 1;
    while lanes < 32 && items * lanes * 2 <= threads {
        lanes *= 2;
    }
    while per_warp && lanes < 32 && partials > LANE_PARTIALS * lanes {
        lanes *= 2;
    }
    items.div_ceil(threads / lanes).max(1)
}

/// Warps of a decode block (kernels/decode_sm80.cu `kWarps`).
const DECODE_WARPS: usize = DECODE_THREADS as usize / 32;

/// The rounding of a packed sequence's first key (kernels/decode_sm80.cu, `block_keys`).
const KEYS_PER_ROUND: usize = DECODE_KEYS_PER_ROUND as usize;

/// The decode forward in `T` (`heuristics::use_decode` said yes), dense or packed (varlen,
/// paged). `alibi` is `(batch, heads)` f32, contiguous, on q's device.
pub(super) fn forward<T: KernelDtype>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
    caller: Option<CudaViewMut<'_, T>>,
) -> Result<(Option<CudaStorage>, Option<CudaStorage>)> {
    let dev = &q.device;
    let stream = dev.cuda_stream();
    // The decode kernels compute any scale in their plain instances; `_mod` adds softcap/ALiBi.
    let mods = p.softcap > 0.0 || p.has_alibi;
    let inst = heuristics::instance(
        KernelKey { family: Family::Decode, dtype: T::DTYPE, head_dim: p.head_dim, mods },
        Arch::Sm80,
    )?;
    let kernel = heuristics::prepare_entry(dev, inst, Entry::of(p))?;
    let (d_inst, smem) = (inst.head_dim as usize, inst.smem_bytes(inst.head_dim));
    kernel.check_smem(smem)?;
    if kernel.blocks_per_sm == 0 {
        bail!("fused-attn decode: {} cannot be resident with {smem} bytes of shared memory", inst.name)
    }

    let group = p.group_size();
    let row_groups = (group * p.seq_q).div_ceil(DECODE_ROWS);
    // Rows' key ranges grow with the row: the union is [lo(0), hi(sq - 1)).
    let (key_begin, key_end) = split_range(p);
    let pairs = p.batch * p.kv_heads * row_groups;
    let tile_rows = (group * p.seq_q).min(DECODE_ROWS);
    let (num_splits, keys_per_split) = heuristics::split_keys(
        key_end - key_begin,
        pairs,
        tile_rows,
        kernel.device.sms.max(1) as usize,
        kernel.blocks_per_sm as usize,
    );
    // A paged split's block-table entries must fit the kernel's shared page list.
    let page_size = p.packed().and_then(|pk| pk.pages.as_ref()).map(|pages| pages.page_size);
    let (num_splits, keys_per_split) = match page_size {
        Some(page) => paged_split(key_end - key_begin, keys_per_split, page),
        None => (num_splits, keys_per_split),
    };
    let grid_y = p.kv_heads * row_groups;
    if p.batch > 65535 || grid_y > 65535 {
        bail!("fused-attn decode: grid too large: batch {} and kv_heads · row groups {grid_y} must be ≤ 65535", p.batch)
    }

    // Several splits on Hopper: the merge is a launch of its own (see the module docs).
    let combine = match (num_splits > 1).then(|| combine_instance(dev, inst)).transpose()?.flatten() {
        Some(c) => Some((c, heuristics::prepare_entry(dev, c, Entry::of(p))?)),
        None => None,
    };

    let elem = std::mem::size_of::<T>();
    let [qt, kt, vt] = dev_qkv::<T>(p, (q, ql), k, v, &stream)?;
    // Partial slots: (batch, seq_q, heads), seq_q the longest sequence when packed.
    let rows_total = p.batch * p.seq_q * p.heads;
    let out_rows = query_rows(p) * p.heads;
    // SAFETY: every element of the (batch, seq_q, heads, head_dim) output (packed:
    // (total_q, heads, head_dim)) is written: each row by the one block that owns it (one
    // split) or by the last split block of its tile (several), zeros for rows that see no key.
    // Packed, a sequence's rows are the tile rows whose query index is below its length.
    // Into the caller's output (`attention_varlen_into`) when given.
    let mut out = unsafe { OutBuf::new(dev, out_rows * p.head_dim, caller) }?;
    // SAFETY: as `out`: the block or last split block that writes a row's output also writes
    // its log-sum-exp, every (batch, head, query) once.
    let mut lse = if p.want_lse { Some(unsafe { dev.alloc::<f32>(out_rows) }?) } else { None };
    // With the combine launch, the f16/bf16 split kernel of small tiles stores one partial
    // per warp (no block merge): defer_combine 2; f32 and larger tiles merge their warps
    // first: 1 (`heuristics::PER_WARP_PARTIALS_MAX_ROWS`).
    let defer = match (&combine, T::DTYPE) {
        (None, _) => 0,
        (Some(_), Dtype::F32) => 1,
        (Some(_), _) if tile_rows > heuristics::PER_WARP_PARTIALS_MAX_ROWS || heuristics::forced_block_partials() => 1,
        (Some(_), _) => 2,
    };
    let n_partials = num_splits * if defer == 2 { DECODE_WARPS } else { 1 };
    // Partials of a split launch: [partials][rows_total][d_inst] acc, then [partials][rows_total][2].
    let partial_acc_words = n_partials * rows_total * d_inst;
    let partial_words = partial_acc_words + n_partials * rows_total * 2;

    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    with_packed(p, &stream, |packed| {
        let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
        let lse_ptr = lse.as_mut().map(|l| l.device_ptr_mut(&stream));
        let alibi = alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr);
        let params = packed.apply(FattnParams {
            lse: lse_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
            row_groups: to_i32(row_groups, "row groups")?,
            key_begin: to_i32(key_begin, "first visible key")?,
            key_end: to_i32(key_end, "last visible key")?,
            keys_per_split: to_i32(keys_per_split, "keys per split")?,
            num_splits: to_i32(num_splits, "splits")?,
            ..common_params(p, [&qt, &kt, &vt], o_ptr, alibi, elem)?
        });
        let cfg = LaunchConfig {
            grid_dim: (num_splits as u32, grid_y as u32, p.batch as u32),
            block_dim: (inst.threads, 1, 1),
            shared_mem_bytes: smem,
        };
        let launch_split = |params: FattnParams| -> Result<()> {
            let mut builder = stream.launch_builder(&kernel.func);
            builder.arg(&params);
            // SAFETY: the kernel's one argument is `FattnParams` by value, matching its C++
            // signature (every offset and the size asserted on both sides). Its pointers are
            // live device allocations held by q, k, v, `out`, the workspace (with splits:
            // `pairs` zero tile counters, one per (batch, grid y) tile, and `partial_words` f32
            // that every split block writes before the last block of its tile reads them) and
            // the alibi storage and (packed) the problem's own checked index tensors for the
            // whole call; the strides and sizes describe them (validated by
            // `crate::problem::validate` or `crate::packed::validate_packed`), the splits
            // cover every sequence's keys (`split_range`), and the grid is (splits, kv heads ×
            // row groups, batch) as the kernel indexes it.
            unsafe { builder.launch(cfg) }.w()?;
            Ok(())
        };
        if num_splits > 1 {
            with_workspace(dev, &stream, pairs, partial_words, |counters, partials| {
                let params = FattnParams {
                    tile_counters: counters,
                    partial_o: partials,
                    partial_ml: partials + partial_acc_words as u64 * 4,
                    defer_combine: defer,
                    ..params
                };
                launch_split(params)?;
                if let Some((c, cf)) = &combine {
                    let rounds = combine_rounds(tile_rows, d_inst, c.threads as usize, n_partials, defer == 2);
                    let cfg = LaunchConfig {
                        grid_dim: (rounds as u32, grid_y as u32, p.batch as u32),
                        block_dim: (c.threads, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    // SAFETY: the combine's one argument is `FattnParams` by value (as the split
                    // kernel's); it reads the partials the split kernel just wrote (the launch
                    // before it on this stream, with nothing queued in between) only after its
                    // `griddepcontrol.wait`, and writes the output and LSE rows that the split
                    // kernel, with `defer_combine` set, leaves to it. Every pointer is live for
                    // the call (as for the split launch above); its grid is (merge rounds of a
                    // full tile, kv heads × row groups, batch), as `combine_block` indexes it
                    // (a tile with fewer rows has fewer rounds: its extra blocks take none).
                    unsafe { launch_dependent(&stream, &cf.func, cfg, &params) }?;
                }
                record_decode_combine(combine.as_ref().map(|(c, _)| c.name));
                Ok(())
            })?;
        } else {
            launch_split(params)?;
            record_decode_combine(None);
        }
        Ok(())
    })?;
    drop(alibi_ptr);
    drop((qt, kt, vt));
    let lse = lse.map(|l| CudaStorage::wrap_cuda_slice(l, dev.clone()));
    Ok((out.into_storage(dev), lse))
}

#[cfg(test)]
mod tests {
    use super::{combine_rounds, paged_split, DECODE_SPLIT_PAGES, KEYS_PER_ROUND};

    /// The combine's blocks per tile are the merge rounds of the kernel's loop: a 4-row tile at
    /// d128 is 128 items of one lane each (one round), a 16-row tile 512 (four), a 2-row tile
    /// at d64 32 items of 2 lanes... up to 4 lanes (one round); with per-warp partials, lanes
    /// enough for at most 4 partials each.
    #[test]
    fn combine_rounds_follow_the_merge_loop() {
        assert_eq!(combine_rounds(4, 128, 128, 16, false), 1);
        assert_eq!(combine_rounds(16, 128, 128, 16, false), 4);
        assert_eq!(combine_rounds(16, 256, 128, 16, false), 8);
        assert_eq!(combine_rounds(1, 64, 128, 16, false), 1);
        assert_eq!(combine_rounds(2, 64, 128, 16, false), 1);
        assert_eq!(combine_rounds(5, 128, 128, 16, false), 2);
        // Per-warp partials: 16 splits × 4 warps = 64 partials take 16 lanes an item (4 each).
        assert_eq!(combine_rounds(4, 128, 128, 64, true), 16);
        assert_eq!(combine_rounds(4, 128, 128, 16, true), 4);
        assert_eq!(combine_rounds(2, 64, 128, 64, true), 4);
    }

    /// Every split of a paged launch, wherever it starts on a round boundary, spans at most
    /// the kernel's staged pages, and the splits cover the keys.
    #[test]
    fn paged_splits_fit_the_staged_page_list() {
        for page in [1, 7, 16, 32, 100, 256, 4096] {
            for key_len in [0, 1, 63, 64, 1000, 8192, 100_000, 1 << 20] {
                for kps in [0, 64, 640, 4096, 1 << 16, 1 << 22] {
                    let (splits, per) = paged_split(key_len, kps, page);
                    assert!(per % KEYS_PER_ROUND == 0 && per > 0, "page {page}: {per} keys per split");
                    assert!(splits * per >= key_len, "page {page}: {splits} × {per} < {key_len}");
                    assert!(per <= kps.max(KEYS_PER_ROUND), "page {page}: the split grew");
                    for start in (0..page.max(64) * 2).step_by(KEYS_PER_ROUND) {
                        let end = start + per;
                        let pages = (end - 1) / page - start / page + 1;
                        assert!(pages <= DECODE_SPLIT_PAGES, "page {page}, start {start}: {pages} pages");
                    }
                }
            }
        }
    }
}
