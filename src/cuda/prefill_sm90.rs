//! The Hopper prefill forward: kernels/fwd_sm90.cu (wgmma, TMA, warp specialization) for the
//! dense f16/bf16 problems it covers, on compute capability 9.0. [`forward`] returns `None`
//! for everything else, which prefill.rs then runs on the sm_80 kernel:
//!
//! * f32, head dims above the largest Hopper instance or not a multiple of 8;
//! * paged caches whose page is neither a whole number of the instance's key blocks nor a
//!   divisor of the key block that holds whole 8-row swizzle atoms (8, 16, 32, 64 keys for
//!   128-key blocks): a key block must be whole TMA boxes of consecutive rows of one page;
//! * layouts a tensor map cannot describe: a start address not on 16 bytes, or a row/head/batch
//!   stride that is not a whole number of 16 bytes;
//! * `FUSED_ATTN_CUDA_KERNELS=sm80` or [`crate::with_cuda_kernels`] with `Sm80`.
//!
//! Packed (varlen) batches run the same kernel's `_varlen` entry: q (and packed k/v) are
//! mapped as one batch of `total` rows and a sequence's blocks start at its cu_seqlens entry;
//! a paged cache is mapped as `(blocks, page)` with the block as the batch coordinate.
//!
//! The tensor maps are made per call from the real strides, so views run in place.
//!
//! **Small grids.** A plain problem whose grid on its instance has fewer blocks than the GPU
//! has SMs (one short sequence, few heads: (1,8,8,512,512,64) is 24 blocks of 192 rows) runs
//! on the instance with the smaller query tile when there is one (d64: the `mods` instance's
//! 128 rows and two consumer warpgroups instead of three; it then runs the plain arithmetic,
//! so the results are the same bits): more SMs work, and each block's chain of key blocks is
//! shorter. H100, same call, 3 alternating rounds: (1,8,8,512,512,64) 12.7 µs against 14.3,
//! causal 13.3 against 14.8 (`lab/results/s11-hopper-sg-h100/`). The same move for causal
//! masks at any grid size (less of the diagonal blocks wasted) lost: (16,16,16,2048,2048,64)
//! causal 411.6 µs against 403.4 on the 192-row tile (`lab/results/s11-hopper-masked-h100/`).
//!
//! **Persistent grid.** The plain d64 and d128 instances loop over query tiles: a dense
//! problem with more tiles than SMs runs one block per SM. A block's K/V ring runs on from
//! one tile into the next and the next tile's Q lands in a second buffer during this one, so
//! the prologue and the epilogue of a tile overlap other work instead of leaving the SM idle
//! between blocks. Tiles go in the 1-D order of kernels/common/grid.cuh (a head's query
//! blocks consecutive, so the blocks in flight share K/V in L2): unmasked, block b takes
//! tiles b, b + grid, ... (`persistent`); under causal or window masks, whose tiles differ
//! in cost, each block draws its next tile from a counter (`dynamic`), so whichever block is
//! free takes the next, heaviest of a head first, except that the last pairs' tiles go
//! heaviest first across those pairs, so that the launch ends on its lightest tiles
//! (`lightest-last`, `tail_pairs`). The counter, and the stream-K tail's arrival
//! flags, come from the stream's workspace (src/cuda/workspace.rs): zero at every launch,
//! left zero by the kernel, so no call queues a zeroing launch before its kernel.
//!
//! **Wide key blocks.** Dense plain problems at d128 without a mask and at d256 with any run on
//! a `_wide` instance: 176-key blocks at d128 and 80-key blocks at d256 (against 128 and 64),
//! as FlashAttention-3 takes them, so that each key block's fixed costs (the O rescale, the
//! row reductions, the barriers) spread over more keys. Their K/V ring leaves room for one Q
//! tile. At d128 the block loops over tiles like the plain d128 one, releasing Q after its last
//! Q·Kᵀ so the next tile's Q loads under the last P·V, and stores O from registers. At d256 it
//! takes one tile per block and stages O in the Q tile: the loop's extra live values spilled
//! (68/116 bytes) in its 240-register consumers, and without the loop it spills none and runs
//! 3.2% faster unmasked, 4.6% causal ((16,16,16,2048,2048,256) 1868 / 1088 µs against 1922 /
//! 1140, same-call A/B on an H100, `lab/results/s15-hopper-ab1-h100/`). A wide instance runs
//! where its blocks cover seq_k with at most 2% more keys than the plain one's (`WIDE_PADDING`).
//! Since session 51 the plain d128 instance shares only K over its CTA pairs (multicast) and
//! the wide one K and V; the plain one then won at 4096 keys (which 176 covers with 3.1% of
//! padding) and the wide one at 16k (1% of padding), so the bound is 2% at every length.
//!
//! **The partial tile at the top.** Under a mask with a right bound (causal, windows), a
//! sequence (dense or packed) that is not a whole number of query tiles moves every tile up so
//! that its one partial tile is the top one, which sees the fewest keys (`partial_tile_top`).
//!
//! **Pair split.** A dense grid of one block per tile on the d64 `_mods` instance (the
//! small-grid tile) with at most half as many tiles as SMs splits each tile's key blocks over
//! a cluster of two blocks: the second sends its partial into the first's shared memory, which
//! merges it and stores the tile (`pair_split`), so that a latency-bound tile's chain of key
//! blocks is half as long.
//!
//! **Stream-K tail.** A strided grid whose tiles are not a whole number of rounds shares its
//! last tiles out by key blocks, so that every block ends at about the same time
//! (`stream_k_tail`; the plain d64 instance).
//!
//! **Tail split.** On the d128 instances, a strided grid whose tiles are not a whole number of
//! rounds cuts each tile of its last round into pieces of its key blocks, one per block; the
//! last piece of a tile to arrive merges them (`tail_pieces`).
//!
//! `FUSED_ATTN_SM90_TILE_RULES` (read once; default
//! `small-grid,persistent,dynamic,lightest-last,wide,shift,streamk,pairs,tail,multicast`) names the rules that apply (`none`: none of them), a diagnostic switch for A/B runs;
//! `FUSED_ATTN_SM90_WIDE_PADDING` (read once) replaces both of the wide rule's padding bounds.
//!
//! **The output's TMA store.** Dense tiles whose output is staged in shared memory store it with
//! TMA through a tensor map of the output (`FattnHopperParams::tma_o`): one thread of each
//! consumer warpgroup issues its rows' boxes, instead of every thread loading the staged tile
//! back and storing 16 bytes per pass (boxes wholly inside the output only; not the plain d64
//! instance, whose registers it would spill). `FUSED_ATTN_SM90_O_STORE=threads` (read once)
//! keeps the threads' stores, an A/B switch.
//!
//! **The trimmed last block.** The key block that holds a tile's last visible key, when that
//! key leaves a 16-key step of the block empty (a key length that is not a whole number of
//! blocks, a causal tile whose diagonal ends mid-block), runs Q·Kᵀ at 64 keys (where those hold it) and P·V
//! over its steps up to that key (`FattnHopperParams::trim_last`): the padded keys' scores are
//! masked and their P is zero, so the result is the same. H200, same binary: (16,16,2048,d64)
//! causal -1.8% (-1.5% in call 9), d256 -0.7%, none slower (lab/results/s35-call7/, -call9/); not
//! in the `_mods` instances (compile time).
//! `FUSED_ATTN_SM90_TRIM=0` (read once) runs every block at full width, an A/B switch.
//!
//! **Head dims 72-96.** Plain problems run on the d96 instance (d128's tiles, GEMMs over 96
//! columns): H200, bf16, (16,16,16,2048,2048,96) 861 µs against 911 on the zero-padded d128
//! instance, causal -9.0%, (4,32,32,4096,4096,96) -5.8% (lab/results/s59-call2/); softcap/ALiBi
//! problems stay on d128's `_mods` instance. `FUSED_ATTN_SM90_D96=0` (read once) sends them all
//! to d128, an A/B switch.

use candle_core::cuda_backend::cudarc::driver::{CudaViewMut, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::WrapErr;
use candle_core::{bail, CudaStorage, Layout, Result, Tensor};

use super::instances::{Arch, Dtype, Family, Instance, KernelKey, Variant, INSTANCES, SOURCES};
use super::params::{FastDiv, FattnHopperParams, FattnParams};
use super::tma::{map_at, tensor_map};
use super::workspace::with_workspace;
use super::{
    alibi_slopes_ptr, common_params, dev_qkv, heuristics, query_rows, to_i32, with_packed, Entry, KernelDtype, OutBuf,
};
use crate::cuda_kernels::{cuda_kernels, CudaKernels};
use crate::problem::Problem;

// SAFETY: `FattnHopperParams` is `#[repr(C)]` plain data (integers, floats and the opaque
// 128-byte tensor maps, no references) with the layout of the C++ struct, field by field
// (offsets and size asserted on both sides, see params.rs); the kernels receive it by value.
unsafe impl DeviceRepr for FattnHopperParams {}

/// The Hopper instance that runs `p` in `T` on this device, or `None` (see the module docs).
fn instance<T: KernelDtype>(p: &Problem, dev: &candle_core::CudaDevice) -> Result<Option<&'static Instance>> {
    if T::DTYPE == Dtype::F32 || !p.head_dim.is_multiple_of(8) {
        return Ok(None);
    }
    if cuda_kernels()? == CudaKernels::Sm80 {
        return Ok(None);
    }
    if !Arch::Sm90a.runs_on(heuristics::device_facts(dev)?.compute_capability) {
        return Ok(None);
    }
    // A build restricted to other GPUs (FUSED_ATTN_CUDA_ARCHS) has no sm_90a code.
    if !super::has_code(SOURCES.iter().position(|s| s.arch == Arch::Sm90a)) {
        return Ok(None);
    }
    let mods = super::prefill_needs_mods(p);
    // Head dims 72-96 run on the d96 instance, or on the d128 one with `FUSED_ATTN_SM90_D96=0`.
    let head_dim = if !d96_instance() && (65..=96).contains(&p.head_dim) { 128 } else { p.head_dim };
    let key = KernelKey { family: Family::Fwd, dtype: T::DTYPE, head_dim, mods };
    let Ok(mut inst) = heuristics::instance(key, Arch::Sm90a) else { return Ok(None) };
    // The smaller query tile of the `mods` instance (see the module docs); it computes the
    // same thing, its modifiers off.
    let blocks = |i: &Instance| p.batch * p.heads * p.seq_q.div_ceil(i.block_rows as usize);
    if !mods && small_grid_rule() && blocks(inst) < heuristics::device_facts(dev)?.sms as usize {
        if let Ok(small) = heuristics::instance(KernelKey { mods: true, ..key }, Arch::Sm90a) {
            if small.block_rows < inst.block_rows && small.head_dim == inst.head_dim {
                inst = small;
            }
        }
    }
    if let Some(wide) = wide_instance(p, inst) {
        inst = wide;
    }
    if let Some(pages) = p.packed().and_then(|pk| pk.pages.as_ref()) {
        if kv_box_rows(pages.page_size, inst).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(inst))
}

/// The wide instance (longer key blocks, see the module docs) of `inst`'s head dim and dtype
/// for a dense plain problem `inst` would run: unmasked at d128, any mask at d256, where its
/// key blocks cover seq_k with at most [`WIDE_PADDING`] more keys than `inst`'s (a partial
/// last block costs as much as a whole one); `None` where there is none, for packed
/// problems, or when the `wide` rule is off.
fn wide_instance(p: &Problem, inst: &Instance) -> Option<&'static Instance> {
    let masked = p.window_left >= 0 || p.window_right >= 0;
    if inst.variant != Variant::Plain || p.packed().is_some() || (masked && inst.head_dim <= 128) || !wide_rule() {
        return None;
    }
    let wide = INSTANCES.iter().find(|i| {
        i.variant == Variant::Wide
            && i.family == inst.family
            && i.arch == inst.arch
            && i.dtype == inst.dtype
            && i.head_dim == inst.head_dim
    })?;
    let padded = |i: &Instance| p.seq_k.div_ceil(i.key_block as usize) * i.key_block as usize;
    (padded(wide) as f64 <= padded(inst) as f64 * wide_padding().unwrap_or(WIDE_PADDING)).then_some(wide)
}

/// `FUSED_ATTN_SM90_WIDE_PADDING` when set to a ratio of at least 1 (read once), which then
/// replaces [`WIDE_PADDING`]: a diagnostic switch for A/B runs of the padding rule.
fn wide_padding() -> Option<f64> {
    static PADDING: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
    *PADDING.get_or_init(|| {
        std::env::var("FUSED_ATTN_SM90_WIDE_PADDING")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|r| *r >= 1.0)
    })
}

/// How many more keys (a ratio) the wide instance's blocks may cover than the plain one's:
/// 176-key blocks ran 4% faster per key than 128-key ones on an H100 (16k keys: 7175-7229 µs
/// against 7365-7492, 1% of padding), and lost at 2048 and 4096 keys, which 176 covers with
/// 3.1% of padding (982 against 971 µs; lab/results/s13-hopper-wide-h100/). Again on an H200
/// after session 17's step descriptors (session 24 call 3, same call, 3 rounds alternating,
/// `FUSED_ATTN_SM90_WIDE_PADDING=1.04` against the rule; lab/results/s24-call3/): the wide
/// instance at (16,16,16,2048,2048,128) 989.6-999.7 µs against 974.9-977.2, (4,32,32,4096,4096,
/// 128) 1902.8-1915.6 against 1869.7-1872.7, (4,32,4,4096,4096,128) 1871.7-1874.9 against
/// 1855.0-1868.4: 1.0-2.3% slower, so the bound stays. Session 50 let the wide instance take
/// 4096 keys and more with up to 4% of padding at d128, when both d128 instances multicast K
/// and V over CTA pairs and the wide one won there by 0.9-1.6% (lab/results/s50-call4/).
/// Session 51's plain d128 instance multicasts K only (2.8% faster at 2048 keys) and takes
/// 4096 back (H200, same call, 2 rounds, `FUSED_ATTN_SM90_WIDE_PADDING=1.0` against that
/// rule; lab/results/s51-call1/, s51-call2/), µs: (4,32,32,4096,4096,128) 1840.3-1840.6 and
/// 1818.2-1823.6 against 1849.5-1850.3 and 1840.1-1842.4 (-0.5%, -1.1%), (4,32,4,4096,4096,
/// 128) 1818.0-1822.5 and 1795.6-1798.9 against 1824.9-1836.9 and 1812.7-1821.6 (-0.6%,
/// -1.1%); while the wide instance keeps (1,32,32,16384,16384,128): 6950.4-7052.3 against
/// 7101.2-7149.4 plain (-1.4 to -2.0%). The wide instance multicasting K only too was level
/// (+0.0 to +0.5%, fwd_sm90 image `FATTN_SM90_LAB_WIDE_MC_V=0`, s51-call2). At 2048 keys the
/// wide instance (3.1% padding, `FUSED_ATTN_SM90_WIDE_PADDING=1.04`) against the rule, session 54
/// call 2 (3 rounds): (16,16,16,2048,2048,128) 991.6-999.6 µs against 947.8-952.8 (+5.0%).
const WIDE_PADDING: f64 = 1.02;

/// Whether head dims 72-96 run on the d96 instances (a quarter less tensor work than the
/// zero-padded d128 ones they ran on before session 59): `FUSED_ATTN_SM90_D96` unset or not
/// `0` (read once), an A/B switch.
fn d96_instance() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FUSED_ATTN_SM90_D96").map_or(true, |v| v.trim() != "0"))
}

/// Whether the wide instances apply: `FUSED_ATTN_SM90_TILE_RULES` unset or naming `wide`.
fn wide_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("wide"))
}

/// Whether dense tiles store their output with TMA: `FUSED_ATTN_SM90_O_STORE` unset or not
/// `threads` (read once), an A/B switch (module docs).
fn o_tma_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FUSED_ATTN_SM90_O_STORE").map_or(true, |v| v.trim() != "threads"))
}

/// Whether a tile's last key block runs at a trimmed width (`FattnHopperParams::trim_last`):
/// `FUSED_ATTN_SM90_TRIM` unset or not `0` (read once), an A/B switch (module docs).
fn trim_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FUSED_ATTN_SM90_TRIM").map_or(true, |v| v.trim() != "0"))
}

/// Whether the small-grid rule applies: `FUSED_ATTN_SM90_TILE_RULES` unset or naming
/// `small-grid` (`none` turns every rule off).
fn small_grid_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("small-grid"))
}

/// Whether the persistent grid applies to unmasked problems (`persistent`) and to masked
/// ones (`dynamic`): `FUSED_ATTN_SM90_TILE_RULES` unset or naming the rule.
fn persistent_rule(masked: bool) -> bool {
    static ON: std::sync::OnceLock<[bool; 2]> = std::sync::OnceLock::new();
    ON.get_or_init(|| [tile_rule("persistent"), tile_rule("dynamic")])[masked as usize]
}

/// Whether every sequence's query tiles move up by its last tile's padding
/// (`FattnHopperParams::partial_tile_top`): under a mask with a right bound (causal,
/// windows), the rows at the top see the fewest keys, so a sequence that is not a whole
/// number of tiles leaves its one partial tile at the top, where it costs the fewest key
/// blocks, instead of at the bottom, where it costs as many as a full one.
/// (16,16,16,2048,2048,64) causal on the 192-row tile: 101 tile × key-block steps per head
/// become 96. Packed sequences tile the same way as dense ones (so a sequence's rows see the
/// same key blocks, and give the same bits, either way); rule `shift`.
fn partial_tile_top(p: &Problem) -> bool {
    p.window_right >= 0 && shift_rule()
}

/// How many of a strided grid's last tiles its blocks share out by key blocks (stream-K,
/// kernels/fwd_sm90.cu; `FattnHopperParams::sk_tail`), or 0. With `tiles` a whole number of
/// rounds of `blocks` there is nothing to share; otherwise the last round would run
/// `tiles % blocks` whole tiles while the other SMs wait (the bench's 4096-tile rows: 31.03
/// rounds of 132 take 32), so the last `blocks + tiles % blocks` tiles are cut into equal
/// ranges of key blocks, one per block (each at least a tile long, so a tile splits in at most
/// two pieces), on the instances that do (`Instance::shares_tail`). A strided grid is
/// unmasked (`grid`): every tile sees all `key_blocks`. The kernel splits the tail in i32
/// units (tail tiles × key blocks × blocks): longer key ranges keep whole tiles, as do
/// problems without keys. Rule `streamk`.
fn stream_k_tail(inst: &Instance, grid: Grid, tiles: usize, key_blocks: usize) -> usize {
    match grid {
        Grid::Strided(blocks)
            if inst.shares_tail()
                && tiles > blocks
                && !tiles.is_multiple_of(blocks)
                && key_blocks > 0
                && stream_k_rule() =>
        {
            let tail = blocks + tiles % blocks;
            if tail.saturating_mul(key_blocks).saturating_mul(blocks + 1) > i32::MAX as usize {
                0
            } else {
                tail
            }
        }
        _ => 0,
    }
}

/// Into how many pieces (contiguous ranges of key blocks, one per block) a strided grid of
/// `tiles` query tiles on `inst` cuts each of its last `tiles % blocks` tiles
/// (kernels/fwd_sm90.cu `kTailSplit`; `FattnHopperParams::tail_pieces`), or 0. Without it the
/// last round runs `tiles % blocks` whole tiles while the other SMs wait: the bench's d128
/// rows have 4096 tiles, 31.03 rounds of 132, and the lab stamps put the 32nd at 3.5% of the
/// kernel (session 27, (16,16,16,2048,2048,128)). The pieces fill at most the grid's blocks,
/// hold at least one key block each, and number at most [`TAIL_PIECES`] (the last piece to
/// arrive reads every piece's partial: a longer merge), or `FUSED_ATTN_SM90_TAIL_PIECES`;
/// fewer than two: none. A strided grid is unmasked (`grid`). Rule `tail`.
///
/// Measured (H200, same-call A/Bs, criterion medians), no split / 4 / 8 pieces: session 28
/// call 2 (3 rounds, `lab/results/s28-call2/`): (16,16,16,2048,2048,128) 982.7-984.2 /
/// 977.6-978.0 / 973.3-977.7 µs, (4,32,32,4096,4096,128) 1907-1927 / 1883-1892 / 1880-1887, GQA
/// (4,32,4,4096,4096,128) 1884-1892 / 1864-1870 / 1863-1864, (1,32,32,16384,16384,128) (wide
/// instance) 7317-7370 / 7243-7259 / 7249-7260; the causal control (a drawn grid) unchanged.
/// Call 3 (2 rounds): 2048 963.7 / 967.6 without, 961.7 / 960.7 with 8. The lab stamps'
/// 32nd round predicted up to -3%: the last piece's merge reads every piece's partial (8 × 68
/// KB per block). The wide d256 instance (one block per tile) with the pieces as extra blocks
/// gained nothing (1773.0 / 1768.7 µs without, 1772.4 / 1766.4 with): its tiles do not end in
/// rounds, so it has no last round of whole tiles to cut; not kept. Nor were the tiles and
/// pieces drawn from the counter (call 5, 3 rounds, same binary, rule on / off): 2048 945.9-951.6
/// against 948.5-950.4 µs, 4096 1826.7-1834.9 against 1821.6-1828.3, GQA 1804.7-1810.9 against
/// 1811.7-1823.4, the causal control 558.1-560.7 against 556.8-558.7 (the lab stamps had
/// predicted -1.3%: the blocks' 31st tiles end 825-846 µs, and the fixed pieces wait for the
/// slowest).
fn tail_pieces(inst: &Instance, grid: Grid, tiles: usize, key_blocks: usize) -> usize {
    match grid {
        Grid::Strided(blocks)
            if inst.splits_tail() && tiles > blocks && !tiles.is_multiple_of(blocks) && tail_rule() =>
        {
            let pieces = (blocks / (tiles % blocks)).min(key_blocks).min(max_tail_pieces());
            if pieces >= 2 {
                pieces
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// The most pieces a tail tile is cut into by default (`tail_pieces`).
const TAIL_PIECES: usize = 8;

/// [`TAIL_PIECES`], or `FUSED_ATTN_SM90_TAIL_PIECES` when set to a whole number (read once): a
/// diagnostic switch for A/B runs.
fn max_tail_pieces() -> usize {
    static PIECES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PIECES.get_or_init(|| {
        std::env::var("FUSED_ATTN_SM90_TAIL_PIECES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(TAIL_PIECES)
    })
}

/// Whether strided grids split their last round's tiles (`tail_pieces`):
/// `FUSED_ATTN_SM90_TILE_RULES` unset or naming `tail`.
fn tail_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("tail"))
}

/// Whether strided grids share out their last tiles (`stream_k_tail`):
/// `FUSED_ATTN_SM90_TILE_RULES` unset or naming `streamk`.
fn stream_k_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("streamk"))
}

/// How many of a masked dense grid's last (batch, head) pairs take their query tiles heaviest
/// first across those pairs (`FattnParams::tail_groups`, kernels/common/grid.cuh
/// `query_block_tail`), or 0. A drawn grid's blocks take one head's tiles after another,
/// heaviest first, so that the blocks in flight share K/V in L2; but then the last heads'
/// heaviest tiles are among the last drawn, and the launch ends on a tail of long tiles while
/// the other SMs idle (ncu, (16,16,16,2048,2048,64) causal: SMs active 94.8% of the kernel,
/// the unmasked row 98.7%). The last pairs ([`heuristics::lightest_last_pairs`]) therefore go every pair's last (heaviest) tile,
/// then every pair's next, ..., and the launch ends on the lightest ones. Rule `lightest-last`.
///
/// Measured (H200, bf16, same-call A/B of one pack, 3 rounds alternating, criterion medians,
/// lab/results/s32-call3): (16,16,16,2048,2048,64) causal 357.2 µs against 366.2 (-2.5%),
/// d128 -1.6%, (4,32,32,4096,4096,128) -2.4%, (4,32,4,4096,4096,128) -1.7%, 16k -0.4%; the
/// per-tile grids (small, d256) unchanged then; with the per-tile grids in the order too
/// (lab/results/s32-call6, 2 rounds): d256 2048 causal -1.0%, d64 -2.7%, d128 -1.7% against
/// every rule but this one. Session 16's version (every group of heads in
/// weight order, H100) had lost 1.7% at d128 2048: here the bulk keeps a head's tiles together.
///
/// A grid of one block per tile under such a mask (d192/d256, the `_mods` instances) takes
/// the same order, the hardware handing out the blocks in index order: `sms` blocks a round.
fn tail_pairs(p: &Problem, grid: Grid, sms: usize, query_blocks: usize, elem_bytes: usize) -> usize {
    let blocks = match grid {
        Grid::Drawn(blocks) => blocks,
        Grid::PerTile(_) => sms,
        Grid::Strided(_) => return 0,
    };
    if !lightest_last_rule() {
        return 0;
    }
    heuristics::lightest_last_pairs(p, blocks, query_blocks, elem_bytes)
}

/// Whether a masked dense grid's last pairs go heaviest first across them (`tail_pairs`):
/// `FUSED_ATTN_SM90_TILE_RULES` unset or naming `lightest-last`.
fn lightest_last_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("lightest-last"))
}

/// Whether the partial tile moves to the top (`partial_tile_top`): `FUSED_ATTN_SM90_TILE_RULES`
/// unset or naming `shift`.
fn shift_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("shift"))
}

/// `FUSED_ATTN_SM90_TILE_RULES`: unset, every rule; else the comma-separated rules it names.
fn tile_rule(name: &str) -> bool {
    std::env::var("FUSED_ATTN_SM90_TILE_RULES").map_or(true, |v| v.split(',').any(|r| r.trim() == name))
}

/// How a launch covers its query tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grid {
    /// One block per tile.
    PerTile(usize),
    /// This many blocks (one per SM), block b taking tiles b, b + blocks, ...: every tile
    /// costs the same.
    Strided(usize),
    /// This many blocks, each drawing its next tile from a counter: tiles of unequal
    /// cost (causal or window masks).
    Drawn(usize),
}

impl Grid {
    fn blocks(self) -> usize {
        match self {
            Grid::PerTile(n) | Grid::Strided(n) | Grid::Drawn(n) => n,
        }
    }
}

/// The grid for `tiles` query tiles of `p` on `inst`: one block per tile, or one per SM where
/// the instance loops over tiles (dense problems with more tiles than SMs): each block then
/// keeps its pipeline full from one tile into the next, and the next tile's Q lands while
/// this one computes (see the module docs).
fn grid(p: &Problem, inst: &Instance, tiles: usize, sms: usize) -> Grid {
    let masked = p.window_left >= 0 || p.window_right >= 0;
    if !inst.loops_over_tiles() || p.packed().is_some() || tiles <= sms || !persistent_rule(masked) {
        Grid::PerTile(tiles)
    } else if masked {
        Grid::Drawn(sms)
    } else {
        Grid::Strided(sms)
    }
}

/// Over how many blocks (a cluster of 2, or 1: none) a launch of `tiles` query tiles of `p` on
/// `inst` on `grid` splits each tile's key blocks (kernels/fwd_sm90.cu `kPairSplit`): dense
/// problems on an instance that can (`Instance::splits_pairs`), one block per tile, at most
/// half as many tiles as SMs and at least two key blocks. Rule `pairs`.
///
/// Measured (H200, same-call A/Bs, 3 rounds, criterion medians; lab/results/s27-call2, -call3):
/// (1,8,8,512,512,64) 12.23 / 12.25 / 12.06 µs against 12.81 / 12.78 / 12.82 without,
/// causal 12.51 / 12.51 / 12.39 against 13.35 / 13.30 / 13.38; clusters of 4 (the kernel
/// takes any size its shared memory holds partials for) were slower, 17.5 µs.
fn pair_split(p: &Problem, inst: &Instance, grid: Grid, tiles: usize, sms: usize) -> usize {
    if !inst.splits_pairs() || p.packed().is_some() || !matches!(grid, Grid::PerTile(_)) || tiles == 0 {
        return 1;
    }
    let key_blocks = p.seq_k.div_ceil(inst.key_block as usize);
    if 2 * tiles <= sms && key_blocks >= 2 && pair_rule() {
        2
    } else {
        1
    }
}

/// Whether a launch of `tiles` query tiles of `p` on `inst` on `grid` runs as clusters of two
/// blocks that share every K and V tile (kernels/fwd_sm90.cu `kMulticast`: each block loads
/// half the tile's panels into both blocks' shared memory with one TMA multicast, so the
/// tile crosses from L2 once per pair): dense strided grids (unmasked: every tile sees every
/// key block) on an instance that can (`Instance::multicasts_kv`), where blocks 2i and 2i + 1
/// run tiles of one (batch, head) at every step: an even number of query blocks per head
/// (`query_blocks`) and an even grid. Rule `multicast`.
///
/// Measured: session 49's probe (H200, `lab/results/s49-call2/`, timing only: each block
/// loaded half of every K/V tile) ran (16,16,16,2048,2048,128) 9.5% and (4,32,32,4096,4096,128)
/// 10.5% faster, at an SM clock of 1950 against 1770 MHz under the 700 W cap: the L2-to-SM
/// bytes of K/V cost power that the tensor cores then lack. Clusters of four would halve K's
/// bytes again, but the H200 holds at most 30 clusters of four of these blocks (120 of 132
/// SMs; pairs: 66, every SM), session 54 (`lab/hopper/cluster_occupancy.py`).
fn kv_multicast(p: &Problem, inst: &Instance, grid: Grid, query_blocks: usize) -> bool {
    match grid {
        Grid::Strided(blocks) => {
            inst.multicasts_kv()
                && p.packed().is_none()
                && query_blocks.is_multiple_of(2)
                && blocks.is_multiple_of(2)
                && multicast_rule()
        }
        _ => false,
    }
}

/// Whether strided grids share K/V tiles over pairs of blocks (`kv_multicast`):
/// `FUSED_ATTN_SM90_TILE_RULES` unset or naming `multicast`.
fn multicast_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("multicast"))
}

/// Whether small grids split their tiles over pairs of blocks (`pair_split`):
/// `FUSED_ATTN_SM90_TILE_RULES` unset or naming `pairs`.
fn pair_rule() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| tile_rule("pairs"))
}

/// Rows of one K/V box of a paged cache with pages of `page` keys: a whole key block when a
/// page holds whole blocks, else one page when it divides the block and holds whole 8-row
/// swizzle atoms (the kernel then loads a block as key_block / page boxes); `None` otherwise.
fn kv_box_rows(page: usize, inst: &Instance) -> Option<u32> {
    let block = inst.key_block as usize;
    if page.is_multiple_of(block) {
        Some(inst.key_block)
    } else if block.is_multiple_of(page) && page.is_multiple_of(8) {
        Some(page as u32)
    } else {
        None
    }
}

/// The `(batch, seq, heads, head_dim)` extents the tensor maps of q and of k/v describe:
/// dense as they are; packed as one batch of every row; paged k/v as `(num_blocks, page)`.
fn map_extents(p: &Problem) -> [(usize, usize, usize, usize); 2] {
    let d = p.head_dim;
    match p.packed() {
        None => [(p.batch, p.seq_q, p.heads, d), (p.batch, p.seq_k, p.kv_heads, d)],
        Some(pk) => {
            let kv = match &pk.pages {
                None => (1, pk.cu_k[pk.batch()], p.kv_heads, d),
                Some(pg) => (pg.num_blocks, pg.page_size, p.kv_heads, d),
            };
            [(1, pk.total_q(), p.heads, d), kv]
        }
    }
}

/// The dense prefill forward on the Hopper kernel, or `None` when it does not cover `p` (the
/// caller runs the sm_80 kernel). `alibi` is `(batch, heads)` f32, contiguous, on q's device.
#[allow(clippy::type_complexity)]
pub(super) fn forward<T: KernelDtype>(
    p: &Problem,
    (q, ql): (&CudaStorage, &Layout),
    k: (&CudaStorage, &Layout),
    v: (&CudaStorage, &Layout),
    alibi: Option<&Tensor>,
    caller: &mut Option<CudaViewMut<'_, T>>,
) -> Result<Option<(Option<CudaStorage>, Option<CudaStorage>)>> {
    let dev = &q.device;
    let Some(inst) = instance::<T>(p, dev)? else { return Ok(None) };
    if inst.variant == Variant::Wide && p.packed().is_some() {
        // `wide_instance` never picks one for a packed batch; its `_varlen` entry traps.
        bail!("fused-attn cuda internal: {} has no packed entry", inst.name)
    }
    let stream = dev.cuda_stream();
    let [qt, kt, vt] = dev_qkv::<T>(p, (q, ql), k, v, &stream)?;
    let d = p.head_dim;
    let [q_ext, kv_ext] = map_extents(p);
    if q_ext.1 == 0 || kv_ext.1 == 0 {
        // No query rows or no keys at all (a tensor map cannot have an empty extent): the
        // sm_80 kernel writes the zeros.
        return Ok(None);
    }
    let Some(tma_q) = tensor_map::<T>(&qt, q_ext, inst.block_rows)? else { return Ok(None) };
    let kv_box = match p.packed().and_then(|pk| pk.pages.as_ref()) {
        Some(pages) => match kv_box_rows(pages.page_size, inst) {
            Some(rows) => rows,
            None => return Ok(None),
        },
        None => inst.key_block,
    };
    let Some(tma_k) = tensor_map::<T>(&kt, kv_ext, kv_box)? else { return Ok(None) };
    let Some(tma_v) = tensor_map::<T>(&vt, kv_ext, kv_box)? else { return Ok(None) };
    let kernel = heuristics::prepare_entry(dev, inst, Entry::of(p))?;
    let smem_bytes = inst.smem_bytes(to_i32(d, "head_dim")? as u32);
    kernel.check_smem(smem_bytes)?;

    let rows = query_rows(p);
    // SAFETY: the kernel writes every element of the (batch, seq_q, heads, head_dim) output
    // (packed: (total_q, heads, head_dim)): the grid covers every (batch, head, query block)
    // up to seq_q (packed: the longest sequence, so every sequence's rows), one block per
    // tile or, for instances that loop over tiles (`grid`), every tile through its blocks'
    // loop, and each block's consumers store every row below its sequence's length and every
    // column below head_dim (zeros for rows that see no key).
    // Into the caller's output (`attention_varlen_into`) when given: taken only here, past
    // every return that leaves the problem to the sm_80 kernel.
    let mut out = unsafe { OutBuf::new(dev, rows * p.heads * d, caller.take()) }?;
    // SAFETY: as `out`: the thread that stores a row also stores its log-sum-exp.
    let mut lse = if p.want_lse { Some(unsafe { dev.alloc::<f32>(rows * p.heads) }?) } else { None };
    let alibi_storage = alibi.map(|t| t.storage_and_layout());
    let alibi_ptr = alibi_storage.as_ref().map(|(s, l)| alibi_slopes_ptr(s, l, &stream)).transpose()?;

    // The kernels find a block's rows in i32 (kernels/common/grid.cuh `query_block_tail_by`: the
    // query blocks as (seq_q + rows - 1) / rows): a seq_q within one tile of i32::MAX would
    // wrap there to negative rows, read before q and write before the output (session 40's
    // audit; the packed path reached it through max_seqlen = i32::MAX before a1e91ba).
    to_i32(p.seq_q + inst.block_rows as usize, "seq_q plus one query tile")?;
    let query_blocks = p.seq_q.div_ceil(inst.block_rows as usize);
    let tiles = p.batch * p.heads * query_blocks;
    let sms = heuristics::device_facts(dev)?.sms as usize;
    // Tile numbers stay i32 in the kernel, up to a persistent grid's last draw (tiles + SMs).
    to_i32(tiles + sms, "batch · heads · query blocks")?;
    let grid = grid(p, inst, tiles, sms);
    let ranks = pair_split(p, inst, grid, tiles, sms);
    let multicast = kv_multicast(p, inst, grid, query_blocks);
    // Stream-K: the pieces' partials (f32, per block two slots of every consumer warpgroup's
    // 64 rows × the instance's head dim, then their (max, sum)).
    let sk_tail = stream_k_tail(inst, grid, tiles, p.seq_k.div_ceil(inst.key_block as usize));
    let consumers = inst.block_rows as usize / 64;
    let mut sk_partial = if sk_tail > 0 {
        let floats = 2 * grid.blocks() * consumers * (64 * inst.head_dim as usize + 128);
        // SAFETY: f32 scratch; the kernel reads a slot only after the piece that wrote it
        // counted itself in (`sk_flags`), so no element is read before it is written.
        Some(unsafe { dev.alloc::<f32>(floats) }?)
    } else {
        None
    };
    // The tail split: pieces per tail tile, and the tail tiles.
    let pieces = tail_pieces(inst, grid, tiles, p.seq_k.div_ceil(inst.key_block as usize));
    let tail_tiles = if pieces > 0 { tiles % grid.blocks() } else { 0 };
    // Counters from the stream's workspace (zero, and left zero by the kernel): a drawn grid's
    // tile counter (word 0), a stream-K tail's arrival flags (words 1.., one per block and
    // consumer warpgroup) or the tail split's (one per tail tile and consumer warpgroup). The
    // tail split's partials too: per piece and consumer warpgroup, (head_dim / 8 + 1) float4
    // per thread.
    let counters = match grid {
        Grid::Drawn(_) => 1,
        _ if sk_tail > 0 => 1 + grid.blocks() * consumers,
        _ if pieces > 0 => 1 + tail_tiles * consumers,
        _ => 0,
    };
    // A split tail's whole rounds before it (FattnHopperParams::whole_rounds).
    let whole_rounds = match grid {
        Grid::Strided(blocks) if pieces > 0 => tiles / blocks,
        Grid::Strided(blocks) if sk_tail > 0 => (tiles - sk_tail) / blocks,
        _ => 0,
    };
    let partial_words = tail_tiles * pieces * consumers * (inst.head_dim as usize / 8 + 1) * 128 * 4;
    let mut launch = |counters_ptr: u64, partials_ptr: u64| -> Result<()> {
        with_packed(p, &stream, |packed| {
            let (o_ptr, _o_guard) = out.device_ptr_mut(&stream);
            if !o_ptr.is_multiple_of(16) {
                bail!("fused-attn cuda internal: the output allocation at {o_ptr:#x} is not 16-byte aligned")
            }
            let lse_ptr = lse.as_mut().map(|l| l.device_ptr_mut(&stream));
            let elem = std::mem::size_of::<T>();
            let fwd = packed.apply(FattnParams {
                lse: lse_ptr.as_ref().map_or(0, |(ptr, _)| *ptr),
                vec_out: 1,
                tail_groups: to_i32(tail_pairs(p, grid, sms, query_blocks, elem), "tail pairs")?,
                ..common_params(p, [&qt, &kt, &vt], o_ptr, alibi_ptr.as_ref().map_or(0, |(ptr, _)| *ptr), elem)?
            });
            // The output's map (dense only: a packed box would cross into the next sequence):
            // (batch, seq_q, heads, head_dim) contiguous, boxes of 64 rows, one consumer's.
            let tma_o = if p.packed().is_none() && o_tma_rule() {
                map_at::<T>(o_ptr, [p.heads * d, d, p.seq_q * p.heads * d], q_ext, 64)?
            } else {
                None
            };
            let tile_counter = if matches!(grid, Grid::Drawn(_)) { counters_ptr } else { 0 };
            let partial_tile_top = partial_tile_top(p) as i32;
            let sk_partial_ptr = sk_partial.as_mut().map(|w| w.device_ptr_mut(&stream));
            let params = FattnHopperParams {
                tma_q,
                tma_k,
                tma_v,
                fwd,
                tile_counter,
                partial_tile_top,
                sk_tail: to_i32(sk_tail, "stream-K tail tiles")?,
                sk_partial: if pieces > 0 { partials_ptr } else { sk_partial_ptr.as_ref().map_or(0, |(ptr, _)| *ptr) },
                sk_flags: if sk_tail > 0 || pieces > 0 { counters_ptr + 4 } else { 0 },
                pair_split: if ranks > 1 { ranks as i32 } else { 0 },
                tail_pieces: to_i32(pieces, "tail pieces")?,
                o_tma: tma_o.is_some() as i32,
                trim_last: trim_rule() as i32,
                div_m: FastDiv::new((fwd.seq_q as u32).div_ceil(inst.block_rows)),
                div_heads: FastDiv::new(fwd.heads as u32),
                div_pairs: FastDiv::new(fwd.tail_groups as u32),
                whole_rounds: to_i32(whole_rounds, "whole rounds")?,
                kv_multicast: multicast as i32,
                pad_hopper_: [0; 14],
                tma_o: tma_o.unwrap_or_default(),
            };
            let grid_x = (ranks * grid.blocks()) as u32;
            let cfg = LaunchConfig {
                grid_dim: (grid_x, 1, 1),
                block_dim: (inst.threads, 1, 1),
                shared_mem_bytes: smem_bytes,
            };
            // The launch's safety, either way: the kernel's one argument is `FattnHopperParams` by
            // value, matching its C++ signature (offsets and size asserted on both sides). The
            // tensor maps describe q, k and v within their allocations (dims and strides from the
            // validated problem; packed:
            // total_q/total_k rows, or num_blocks pages of page_size rows, as
            // `crate::packed::validate_packed` checked them against the tensors), and TMA never
            // reads outside a map (out-of-bounds boxes are zero-filled); the output's map (dense,
            // `tma_o`) is `out`'s own (batch, seq_q, heads, head_dim) contiguous extent, and a TMA
            // store writes no element outside it. The other pointers are
            // live allocations held by `q`, `k`, `v`, `out`, `lse`, the stream's workspace (its
            // counters zero: the tile counter, which the blocks of a drawn grid increment
            // atomically and the last draw resets, and the stream-K flags, one per block and
            // consumer, each reset by its tile's second piece, or the tail split's, one per tail
            // tile and consumer, each reset by its tile's last piece; its partials are sized for
            // every piece, consumer and the instance's head dim, and a piece reads them only
            // after every piece counted itself in), the stream-K partials (sized for
            // the grid's blocks and the instance's consumers and head dim), the alibi storage
            // and the problem's checked index tensors for the whole call (every cu_seqlens entry
            // within the rows, every block-table entry a sequence uses below num_blocks). The
            // output is contiguous with head_dim % 8 == 0 and a start checked above to lie on 16
            // bytes, so its 16-byte stores are aligned.
            if ranks > 1 {
                // SAFETY: as said above; the grid is ranks · tiles blocks in clusters of `ranks`,
                // block ranks·t + r taking share r of tile t's key blocks (kernels/fwd_sm90.cu
                // reads `pair_split`), and the instance's shared memory (`smem_bytes`) holds the
                // other ranks' partials.
                unsafe { super::cluster::launch_clusters(&stream, &kernel.func, cfg, &params, ranks as u32) }?;
            } else if multicast {
                // SAFETY: as said above; the grid is even (`kv_multicast`) and the kernel, told
                // by `kv_multicast`, runs blocks 2i and 2i + 1 as one cluster over tiles of one
                // (batch, head) (even query blocks per head), each writing only the shared
                // memory and barriers of its own cluster.
                unsafe { super::cluster::launch_clusters(&stream, &kernel.func, cfg, &params, 2) }?;
            } else {
                let mut builder = stream.launch_builder(&kernel.func);
                builder.arg(&params);
                // SAFETY: as said above.
                unsafe { builder.launch(cfg) }.w()?;
            }
            crate::cuda_kernels::record_prefill(inst.name);
            crate::cuda_kernels::record_prefill_pairs(ranks > 1);
            crate::cuda_kernels::record_prefill_tail(pieces);
            crate::cuda_kernels::record_prefill_multicast(multicast);
            Ok(())
        })
    };
    if counters > 0 {
        with_workspace(dev, &stream, counters, partial_words, launch)?;
    } else {
        launch(0, 0)?;
    }
    drop(alibi_ptr);
    drop((qt, kt, vt));
    let lse = lse.map(|l| CudaStorage::wrap_cuda_slice(l, dev.clone()));
    Ok(Some((out.into_storage(dev), lse)))
}

#[cfg(test)]
mod tests {
    use super::super::instances::Instance;
    use super::super::instances::{Arch, Family, Variant, INSTANCES};
    use super::{grid, kv_box_rows, kv_multicast, pair_split, tail_pairs, tail_pieces, wide_instance, Grid};
    use crate::problem::{Problem, SeqLayout};

    fn dense(batch: usize, heads: usize, seq: usize, head_dim: usize, window_right: i64) -> Problem {
        Problem {
            batch,
            seq_q: seq,
            seq_k: seq,
            heads,
            kv_heads: heads,
            head_dim,
            scale: 0.1,
            softcap: 0.0,
            window_left: -1,
            window_right,
            has_alibi: false,
            layout: SeqLayout::Dense,
            want_lse: false,
            mm_ranges: None,
        }
    }

    /// The Hopper prefill instance of head dim `d` and variant `v` (the first, f16).
    fn hopper(d: u32, v: Variant) -> &'static Instance {
        INSTANCES
            .iter()
            .find(|i| i.arch == Arch::Sm90a && i.family == Family::Fwd && i.head_dim == d && i.variant == v)
            .expect("a Hopper prefill instance of that head dim and variant")
    }

    #[test]
    fn persistent_grids_only_where_blocks_loop_over_tiles() {
        for inst in INSTANCES.iter().filter(|i| i.arch == Arch::Sm90a && i.family == Family::Fwd) {
            let expect = matches!(inst.variant, Variant::Plain | Variant::Wide) && inst.head_dim <= 128;
            assert_eq!(inst.loops_over_tiles(), expect, "{}", inst.name);
        }
        if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_some() {
            println!("SKIPPED: the grid rules are set by FUSED_ATTN_SM90_TILE_RULES");
            return;
        }
        let d128 = hopper(128, Variant::Plain);
        // (16, 16, 2048, d128): 16 tiles of 128 rows per head, 4096 in all, on 132 SMs.
        let tiles = 16 * 16 * 16;
        assert_eq!(grid(&dense(16, 16, 2048, 128, -1), d128, tiles, 132), Grid::Strided(132));
        // Causal (window_right 0): the blocks draw their tiles.
        assert_eq!(grid(&dense(16, 16, 2048, 128, 0), d128, tiles, 132), Grid::Drawn(132));
        // No more tiles than SMs: one block per tile.
        assert_eq!(grid(&dense(1, 8, 1024, 128, -1), d128, 64, 132), Grid::PerTile(64));
        assert_eq!(grid(&dense(1, 8, 1024, 128, -1), d128, 132, 132), Grid::PerTile(132));
        // Instances without a second Q tile: one block per tile, however many.
        for inst in [hopper(256, Variant::Plain), hopper(128, Variant::Mods), hopper(64, Variant::Mods)] {
            assert_eq!(grid(&dense(16, 16, 2048, inst.head_dim as usize, -1), inst, tiles, 132), Grid::PerTile(tiles));
        }
        assert_eq!(Grid::Drawn(7).blocks(), 7);
    }

    #[test]
    fn drawn_grids_end_on_their_lightest_tiles() {
        if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_some() {
            println!("SKIPPED: the tile rules are set by FUSED_ATTN_SM90_TILE_RULES");
            return;
        }
        // (16,16,2048,d64) causal, bf16: 11 query tiles of 192 rows per pair; two rounds of
        // 132 blocks are 24 pairs (12 MiB of K/V).
        let causal = dense(16, 16, 2048, 64, 0);
        assert_eq!(tail_pairs(&causal, Grid::Drawn(132), 132, 11, 2), 24);
        // A grid of one block per tile: rounds of one block per SM. (16,16,2048,d256) causal
        // on 128-row tiles: 16 per pair, 2 MiB of K/V each.
        assert_eq!(tail_pairs(&dense(16, 16, 2048, 256, 0), Grid::PerTile(4096), 132, 16, 2), 16);
        // Strided grids (every tile the same cost) and masks without a right bound keep the
        // plain order.
        assert_eq!(tail_pairs(&causal, Grid::Strided(132), 132, 11, 2), 0);
        assert_eq!(tail_pairs(&dense(16, 16, 2048, 64, -1), Grid::PerTile(2816), 132, 11, 2), 0);
        // (1,32,16384,d128) causal: 128 tiles per pair, 8 MiB of K/V each: the L2 bound (4)
        // over the rounds' 3 pairs is not reached; at (1,32,65536) it is (32 MiB / 32 MiB).
        assert_eq!(tail_pairs(&dense(1, 32, 16384, 128, 0), Grid::Drawn(132), 132, 128, 2), 3);
        assert_eq!(tail_pairs(&dense(1, 32, 65536, 128, 0), Grid::Drawn(132), 132, 512, 2), 1);
        // Never more pairs than the problem has.
        assert_eq!(tail_pairs(&dense(1, 2, 2048, 64, 0), Grid::Drawn(132), 132, 11, 2), 2);
    }

    #[test]
    fn wide_key_blocks_for_dense_plain_problems_unmasked_at_d128_any_mask_at_d256() {
        if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_some() {
            println!("SKIPPED: the tile rules are set by FUSED_ATTN_SM90_TILE_RULES");
            return;
        }
        let (d128, d256) = (hopper(128, Variant::Plain), hopper(256, Variant::Plain));
        let wide = |p: &Problem, inst: &Instance| wide_instance(p, inst).map(|i| (i.name, i.key_block));
        let d128_wide = Some((hopper(128, Variant::Wide).name, 176));
        let d256_wide = Some((hopper(256, Variant::Wide).name, 80));
        assert_eq!(wide(&dense(1, 32, 16384, 128, -1), d128), d128_wide);
        assert_eq!(wide(&dense(1, 32, 16384, 128, 0), d128), None, "causal d128 keeps 128-key blocks");
        // 2048 keys: 12 blocks of 176 cover 2112 (3.1% more than 16 of 128).
        assert_eq!(wide(&dense(16, 16, 2048, 128, -1), d128), None);
        assert_eq!(wide(&dense(2, 16, 1400, 128, -1), d128), d128_wide, "1408 keys either way");
        // 4096 keys: 24 blocks of 176 cover 4224 (3.1% more than 32 of 128); 4224 keys are 24
        // and 33 whole blocks.
        assert_eq!(wide(&dense(4, 32, 4096, 128, -1), d128), None);
        assert_eq!(wide(&dense(1, 40, 4224, 128, -1), d128), d128_wide);
        assert_eq!(wide(&dense(16, 16, 2048, 256, -1), d256), d256_wide);
        assert_eq!(wide(&dense(16, 16, 2048, 256, 0), d256), d256_wide);
        // Mods instances, d64 and d192 have none.
        assert_eq!(wide(&dense(16, 16, 2048, 128, -1), hopper(128, Variant::Mods)), None);
        assert_eq!(wide(&dense(16, 16, 2048, 64, -1), hopper(64, Variant::Plain)), None);
        assert_eq!(wide(&dense(16, 16, 2048, 192, -1), hopper(192, Variant::Plain)), None);
        // Every wide instance's dtype and head dim has a plain one.
        for w in INSTANCES.iter().filter(|i| i.variant == Variant::Wide) {
            assert!(INSTANCES.iter().any(|i| i.variant == Variant::Plain
                && i.arch == w.arch
                && i.family == w.family
                && i.dtype == w.dtype
                && i.head_dim == w.head_dim));
            assert!(w.key_block > hopper(w.head_dim, Variant::Plain).key_block, "{}", w.name);
        }
    }

    #[test]
    fn small_d64_grids_split_their_tiles_over_block_pairs() {
        if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_some() {
            println!("SKIPPED: the tile rules are set by FUSED_ATTN_SM90_TILE_RULES");
            return;
        }
        let small = hopper(64, Variant::Mods);
        // (1, 8, 512, d64): 32 tiles of 128 rows and 4 key blocks, 64 blocks on 132 SMs; causal too.
        assert_eq!(pair_split(&dense(1, 8, 512, 64, -1), small, Grid::PerTile(32), 32, 132), 2);
        assert_eq!(pair_split(&dense(1, 8, 512, 64, 0), small, Grid::PerTile(32), 32, 132), 2);
        assert_eq!(pair_split(&dense(1, 8, 256, 64, -1), small, Grid::PerTile(16), 16, 132), 2);
        // More than half as many tiles as SMs, one key block, or no tiles: one block per tile.
        assert_eq!(pair_split(&dense(1, 17, 512, 64, -1), small, Grid::PerTile(68), 68, 132), 1);
        assert_eq!(pair_split(&dense(1, 8, 128, 64, -1), small, Grid::PerTile(8), 8, 132), 1);
        assert_eq!(pair_split(&dense(1, 8, 512, 64, -1), small, Grid::PerTile(0), 0, 132), 1);
        // Other instances never split.
        for inst in INSTANCES.iter().filter(|i| !i.splits_pairs()) {
            assert_eq!(pair_split(&dense(1, 8, 512, 64, -1), inst, Grid::PerTile(32), 32, 132), 1, "{}", inst.name);
        }
        assert!(INSTANCES.iter().filter(|i| i.splits_pairs()).all(|i| i.block_rows == 128 && !i.loops_over_tiles()));
    }

    #[test]
    fn d128_strided_grids_split_their_last_round_into_pieces_of_key_blocks() {
        if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_some()
            || std::env::var_os("FUSED_ATTN_SM90_TAIL_PIECES").is_some()
        {
            println!("SKIPPED: the tile rules are set by FUSED_ATTN_SM90_TILE_RULES or FUSED_ATTN_SM90_TAIL_PIECES");
            return;
        }
        let (d128, wide) = (hopper(128, Variant::Plain), hopper(128, Variant::Wide));
        // (16, 16, 2048, d128): 4096 tiles on 132 SMs, 4 in the last round, 16 key blocks: 8
        // pieces (the cap) of two key blocks each, on 32 blocks.
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 4096, 16), 8);
        // (1, 32, 16384, d128) on the wide instance: 94 key blocks of 176.
        assert_eq!(tail_pieces(wide, Grid::Strided(132), 4096, 94), 8);
        // As many pieces as fit the grid, and no more than the key blocks.
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 288, 5), 5, "24 tail tiles: at most 5 pieces each");
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 288, 3), 3);
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 132 + 50, 16), 2);
        // A last round of more than half the grid, one key block, a whole number of rounds, or
        // no more tiles than blocks: none.
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 250, 16), 0);
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 4096, 1), 0);
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 2 * 132, 16), 0);
        assert_eq!(tail_pieces(d128, Grid::Strided(132), 100, 16), 0);
        // Drawn and per-tile grids, and the other instances: none.
        assert_eq!(tail_pieces(d128, Grid::Drawn(132), 4096, 16), 0);
        assert_eq!(tail_pieces(d128, Grid::PerTile(4096), 4096, 16), 0);
        for inst in INSTANCES.iter().filter(|i| !i.splits_tail()) {
            assert_eq!(tail_pieces(inst, Grid::Strided(132), 4096, 16), 0, "{}", inst.name);
        }
        let splitting: Vec<_> = INSTANCES.iter().filter(|i| i.splits_tail()).map(|i| i.name).collect();
        assert_eq!(splitting.len(), 4, "the f16 and bf16 plain and wide d128 instances: {splitting:?}");
        assert!(INSTANCES.iter().filter(|i| i.splits_tail()).all(|i| i.loops_over_tiles() && !i.shares_tail()));
    }

    #[test]
    fn paged_boxes_are_whole_blocks_or_whole_pages_of_whole_swizzle_atoms() {
        // The wide instances run dense problems only (`wide_instance`).
        let packed = |i: &&Instance| i.arch == Arch::Sm90a && i.family == Family::Fwd && i.variant != Variant::Wide;
        for inst in INSTANCES.iter().filter(packed) {
            let block = inst.key_block as usize;
            // 128-key blocks up to d128, 64 above (HopperTraits in kernels/fwd_sm90.cu).
            assert_eq!(block, if inst.head_dim <= 128 { 128 } else { 64 }, "{}: key block", inst.name);
            // A block of consecutive rows of one page: pages of whole blocks.
            for page in [block, 2 * block, 3 * block, 1024] {
                assert_eq!(kv_box_rows(page, inst), Some(block as u32), "{} page {page}", inst.name);
            }
            // One box per page, each starting on a 1 KiB swizzle atom (8 rows of 128 bytes).
            for page in [8, 16, 32, 64].into_iter().filter(|&pg| pg < block) {
                assert_eq!(kv_box_rows(page, inst), Some(page as u32), "{} page {page}", inst.name);
            }
            // Pages that straddle blocks or split an atom: the sm_80 kernel.
            for page in [1, 4, 7, 24, 48, 100, 200, 255].into_iter().chain((block == 128).then_some(96)) {
                assert_eq!(kv_box_rows(page, inst), None, "{} page {page}", inst.name);
            }
        }
    }
    #[test]
    fn multicast_only_on_even_strided_d128_grids() {
        let d128 = hopper(128, Variant::Plain);
        let wide = hopper(128, Variant::Wide);
        // (16,16,2048) d128: 16 query blocks per head, 132 blocks.
        let p = dense(16, 16, 2048, 128, -1);
        assert!(kv_multicast(&p, d128, Grid::Strided(132), 16));
        assert!(kv_multicast(&p, wide, Grid::Strided(132), 16));
        // An odd number of query blocks per head: tiles 2i and 2i + 1 may lie in two heads.
        assert!(!kv_multicast(&dense(5, 10, 531, 128, -1), d128, Grid::Strided(132), 5));
        // An odd grid: a block would have no partner.
        assert!(!kv_multicast(&p, d128, Grid::Strided(131), 16));
        // Drawn (masked) and per-tile grids: tiles of one pair see other key blocks, or no loop.
        assert!(!kv_multicast(&dense(16, 16, 2048, 128, 0), d128, Grid::Drawn(132), 16));
        assert!(!kv_multicast(&p, d128, Grid::PerTile(4096), 16));
        // Every other instance: never (HopperTraits::kMulticast, asserted in the kernel file).
        for inst in INSTANCES.iter().filter(|i| !i.multicasts_kv()) {
            assert!(!kv_multicast(&p, inst, Grid::Strided(132), 16), "{}", inst.name);
        }
        let on: Vec<_> = INSTANCES.iter().filter(|i| i.multicasts_kv()).map(|i| i.name).collect();
        assert!(on.iter().all(|n| n.contains("_d128_")), "{on:?}");
        assert_eq!(on.len(), 4, "plain and wide d128, f16 and bf16: {on:?}");
    }
}
