//! Every kernel file the crate builds and every kernel instance it launches, declared once.
//!
//! * build.rs `include!`s this file. It compiles each [`SOURCES`] entry for its architecture
//!   and generates, per file, the `extern "C"` entry points of its [`INSTANCES`] together
//!   with C++ `static_assert`s that the launch numbers below (threads, rows and keys per
//!   block, dynamic shared memory) are what the kernel's traits compute. The labs build from
//!   the same generated units (lab/README.md).
//! * The crate looks instances up here by [`KernelKey`] (src/cuda/heuristics.rs picks one)
//!   and launches them with these numbers.
//!
//! Plain data on purpose: nothing here uses the crate or any dependency.

/// A kernel family: one algorithm, one file per architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// FlashAttention-2 forward: one block per (batch, head, query block).
    Fwd,
    /// Split-key flash-decoding: few query rows against many keys.
    Decode,
    /// The decode's merge of its split partials as a launch of its own (compute capability
    /// 9.0, programmatic dependent launch): one block per (batch, kv head, row group) tile.
    DecodeCombine,
    /// FlashAttention-2 backward, main kernel: one block per (key block, column split, kv
    /// split, kv head, batch); dQ through an f32 accumulator.
    Bwd,
    /// Backward preprocess: D = rowsum(dO∘O) and lse·log2 e, one warp per query row.
    BwdPreprocess,
    /// Backward convert: an f32 accumulator (dQ, or split dK/dV) into the input dtype.
    BwdConvert,
}

impl Family {
    /// Every family, for the tests that walk them all.
    #[cfg(test)]
    pub const ALL: [Family; 6] =
        [Family::Fwd, Family::Decode, Family::DecodeCombine, Family::Bwd, Family::BwdPreprocess, Family::BwdConvert];

    /// The tag of the generated C++ names (`FATTN_INSTANCES_<FAMILY>_<ARCH>`,
    /// `FATTN_INSTANCE_<FAMILY>`). Read by build.rs.
    #[allow(dead_code)]
    pub const fn cpp_tag(self) -> &'static str {
        match self {
            Family::Fwd => "FWD",
            Family::Decode => "DECODE",
            Family::DecodeCombine => "DECODE_COMBINE",
            Family::Bwd => "BWD",
            Family::BwdPreprocess => "BWD_PREPROCESS",
            Family::BwdConvert => "BWD_CONVERT",
        }
    }
}

/// What a kernel file is compiled for: the GPUs it carries machine code (SASS) for, and the
/// PTX a newer GPU's driver compiles instead. build.rs packs both into one fatbin per file
/// (`nvcc -fatbin`, one `-gencode` naming every target); at load time the driver takes the cubin of
/// the device's compute capability (an `sm_8x` cubin runs on any `8.y` GPU with `y ≥ x`)
/// and JIT-compiles the PTX only when no cubin fits. To add an architecture-specific file
/// (say `sm_90a` wgmma code), add a variant here whose `virtual_arch` is `compute_90a`, whose
/// `sass` is `["sm_90a"]` and whose `ptx_fallback` is false (`a` PTX runs on no other GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// sm_80-class code (mma.sync, cp.async, ldmatrix): machine code for sm_80, which the
    /// driver runs natively on every 8.x GPU (A100 8.0, A10/RTX 30 8.6, Jetson Orin 8.7,
    /// L4/L40/RTX 40 8.9: same major version, no JIT), and for sm_90 (H100, H200), plus
    /// `compute_80` PTX for anything newer (10.x, 12.x: JIT-compiled at first load).
    Sm80,
    /// Hopper-only code (wgmma, TMA, setmaxnreg): an `sm_90a` cubin and no PTX, since
    /// `compute_90a` PTX runs on no other GPU. Chosen only on compute capability 9.0.
    Sm90a,
}

impl Arch {
    /// The virtual architecture nvcc compiles the source for: every cubin of the file is
    /// assembled from this one PTX (one front-end pass per file). Read by build.rs.
    #[allow(dead_code)]
    pub const fn virtual_arch(self) -> &'static str {
        match self {
            Arch::Sm80 => "compute_80",
            Arch::Sm90a => "compute_90a",
        }
    }

    /// The real architectures the fatbin holds cubins for. Read by build.rs (which may keep
    /// fewer: `FUSED_ATTN_CUDA_ARCHS`).
    #[allow(dead_code)]
    pub const fn sass(self) -> &'static [&'static str] {
        match self {
            // No sm_86/sm_89 cubins: the sm_80 one runs on them natively, and each extra
            // cubin is one more ptxas pass over every file (about 30 s of CPU each).
            // No sm_90a: no kernel uses wgmma/TMA yet, and plain sm_90 runs on every 9.0 GPU.
            Arch::Sm80 => &["sm_80", "sm_90"],
            Arch::Sm90a => &["sm_90a"],
        }
    }

    /// Whether the fatbin also holds the `virtual_arch` PTX, for GPUs newer than every cubin
    /// (the driver JIT-compiles it at first load, seconds per file). Read by build.rs.
    #[allow(dead_code)]
    pub const fn ptx_fallback(self) -> bool {
        match self {
            Arch::Sm80 => true,
            Arch::Sm90a => false,
        }
    }

    /// The tag of the generated C++ names. Read by build.rs.
    #[allow(dead_code)]
    pub const fn cpp_tag(self) -> &'static str {
        match self {
            Arch::Sm80 => "SM80",
            Arch::Sm90a => "SM90A",
        }
    }

    /// Whether a GPU of compute capability `cc` runs this architecture's code natively or
    /// through its PTX: any newer GPU for `Sm80`, exactly 9.0 for `Sm90a`.
    pub const fn runs_on(self, cc: (i32, i32)) -> bool {
        match self {
            Arch::Sm80 => cc.0 > 8 || (cc.0 == 8 && cc.1 >= 0),
            Arch::Sm90a => cc.0 == 9 && cc.1 == 0,
        }
    }

    /// The oldest compute capability whose GPUs run it.
    pub const fn min_compute_capability(self) -> (i32, i32) {
        match self {
            Arch::Sm80 => (8, 0),
            Arch::Sm90a => (9, 0),
        }
    }
}

/// The element type of q, k, v and the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    F16,
    BF16,
    F32,
}

impl Dtype {
    /// The tag the generated C++ uses for it. Read by build.rs.
    #[allow(dead_code)]
    pub const fn cpp_tag(self) -> &'static str {
        match self {
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::F32 => "F32",
        }
    }
}

/// Whether an instance has the softcap/ALiBi code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Without it: scores are the scaled dot products.
    Plain,
    /// With it (`_mods` / `_mod` in the kernel name).
    Mods,
    /// One kernel for both.
    Both,
    /// Hopper prefill only (`_wide`): plain arithmetic on longer key blocks, for dense problems
    /// that src/cuda/prefill_sm90.rs picks by name (unmasked at d128, any mask at d256); never
    /// found by a [`KernelKey`] lookup.
    Wide,
}

impl Variant {
    /// Whether an instance of this variant computes a problem that needs (`mods`) or does
    /// not need the softcap/ALiBi code.
    pub const fn serves(self, mods: bool) -> bool {
        match self {
            Variant::Plain => !mods,
            Variant::Mods => mods,
            Variant::Both => true,
            Variant::Wide => false,
        }
    }

    /// The number the generated C++ passes (0 plain, 1 mods, 2 both, 3 wide). Read by build.rs.
    #[allow(dead_code)]
    pub const fn cpp_code(self) -> u32 {
        match self {
            Variant::Plain => 0,
            Variant::Mods => 1,
            Variant::Both => 2,
            Variant::Wide => 3,
        }
    }
}

/// Dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy)]
pub enum Smem {
    /// The same for every problem.
    Bytes(u32),
    /// A function of the problem's head dim (1..=the instance's head dim).
    PerHeadDim(fn(u32) -> u32),
}

/// One `extern "C"` kernel: what it computes and how it is launched.
#[derive(Debug, Clone, Copy)]
pub struct Instance {
    pub name: &'static str,
    pub family: Family,
    pub arch: Arch,
    pub dtype: Dtype,
    /// The head dim its tiles hold; smaller head dims run on it, zero-padded in the kernel.
    pub head_dim: u32,
    pub variant: Variant,
    /// Threads per block.
    pub threads: u32,
    /// Query rows per block (prefill: `kBlockM`; decode: (q head, query) rows of one tile;
    /// backward: query rows per work item; preprocess: rows per block, one per warp; convert:
    /// output rows (batch, seq) per block).
    pub block_rows: u32,
    /// Keys a block advances per step (prefill: `kBlockN`; decode: 4 warps × 16 keys, the
    /// unit of a split; backward: the keys one block owns; 0 where a kernel reads no keys).
    /// Checked against the kernel by build.rs.
    pub key_block: u32,
    /// Blocks that split the head dim's columns between them (backward d256: 2); 1 elsewhere.
    /// Checked against the kernel by build.rs (backward only; the others assert 1 in Rust).
    pub col_splits: u32,
    pub smem: Smem,
}

impl Instance {
    /// Dynamic shared memory for a problem of head dim `head_dim` (≤ the instance's).
    pub fn smem_bytes(&self, head_dim: u32) -> u32 {
        match self.smem {
            Smem::Bytes(b) => b,
            Smem::PerHeadDim(f) => f(head_dim),
        }
    }

    /// Whether the instance's dense entry loops over query tiles, so that a grid of fewer
    /// blocks than tiles computes them all (block b takes tiles b, b + grid, ...): the plain
    /// and wide Hopper prefill instances up to d128 (not the wide d256), whose `HopperTraits` are
    /// persistent (kernels/fwd_sm90.cu asserts the same of every instance). Their `_varlen`
    /// entry takes one tile per block.
    pub const fn loops_over_tiles(&self) -> bool {
        matches!(self.arch, Arch::Sm90a)
            && matches!(self.family, Family::Fwd)
            && matches!(self.variant, Variant::Wide | Variant::Plain)
            && self.head_dim <= 128
    }

    /// Whether a strided grid of this instance shares its last tiles out by key blocks
    /// (stream-K, src/cuda/prefill_sm90.rs `stream_k_tail`): the plain d64 Hopper prefill
    /// instance, whose `HopperTraits::kStreamK` is set (kernels/fwd_sm90.cu asserts the same
    /// of every instance); measured a loss on the others (session 17).
    pub const fn shares_tail(&self) -> bool {
        self.loops_over_tiles() && matches!(self.variant, Variant::Plain) && self.head_dim == 64
    }

    /// Whether a strided grid of this instance cuts its last round's tiles into pieces of key
    /// blocks, one per block (src/cuda/prefill_sm90.rs `tail_pieces`): the plain and wide d128
    /// Hopper prefill instances, whose `HopperTraits::kTailSplit` is set (kernels/fwd_sm90.cu
    /// asserts the same of every instance).
    pub const fn splits_tail(&self) -> bool {
        self.loops_over_tiles() && self.head_dim == 128
    }

    /// Whether a strided grid of this instance may run as clusters of two blocks that share
    /// each K and V tile through TMA multicast (src/cuda/prefill_sm90.rs `kv_multicast`): the
    /// plain and wide d128 Hopper prefill instances, whose `HopperTraits::kMulticast` is set
    /// (kernels/fwd_sm90.cu asserts the same of every instance).
    pub const fn multicasts_kv(&self) -> bool {
        self.splits_tail()
    }

    /// Whether a small grid of this instance may split each tile's key blocks over a cluster of
    /// two blocks (src/cuda/prefill_sm90.rs `pair_split`): the d64 `_mods` Hopper prefill
    /// instance (128-row tiles, one per block), whose `HopperTraits::kPairSplit` is set
    /// (kernels/fwd_sm90.cu asserts the same of every instance). Its shared memory holds the
    /// other block's partial.
    pub const fn splits_pairs(&self) -> bool {
        matches!(self.arch, Arch::Sm90a)
            && matches!(self.family, Family::Fwd)
            && matches!(self.variant, Variant::Mods)
            && self.head_dim == 64
    }
}

/// A kernel file, the families it holds and the architecture it is built for. build.rs
/// compiles it into one fatbin, which src/cuda/mod.rs loads once per device as one module.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// Compiled by build.rs.
    #[allow(dead_code)]
    pub file: &'static str,
    pub families: &'static [Family],
    pub arch: Arch,
}

/// Every kernel file build.rs compiles.
pub const SOURCES: &[Source] = &[
    Source { file: "kernels/fwd_sm80.cu", families: &[Family::Fwd], arch: Arch::Sm80 },
    Source { file: "kernels/decode_sm80.cu", families: &[Family::Decode], arch: Arch::Sm80 },
    Source {
        file: "kernels/bwd_sm80.cu",
        families: &[Family::Bwd, Family::BwdPreprocess, Family::BwdConvert],
        arch: Arch::Sm80,
    },
    Source { file: "kernels/fwd_sm90.cu", families: &[Family::Fwd], arch: Arch::Sm90a },
    Source { file: "kernels/bwd_sm90.cu", families: &[Family::Bwd], arch: Arch::Sm90a },
    Source { file: "kernels/decode_sm90.cu", families: &[Family::DecodeCombine], arch: Arch::Sm90a },
];

impl Source {
    /// Whether this file builds `inst`.
    pub fn builds(&self, inst: &Instance) -> bool {
        self.arch == inst.arch && self.families.contains(&inst.family)
    }
}

/// What a launch asks for: the instance is the smallest of its family, architecture, dtype and
/// variant whose head dim holds `head_dim` (src/cuda/heuristics.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey {
    pub family: Family,
    pub dtype: Dtype,
    pub head_dim: usize,
    /// The problem needs the softcap/ALiBi code (or, for prefill, a scale ≤ 0).
    pub mods: bool,
}

/// Dynamic shared memory of the f32 prefill kernel up to d256: Q (16 rows), K (32 rows padded
/// to an odd stride), V (32 rows), f32; as `fattn::f32::smem_floats` in kernels/fwd_sm80.cu.
pub const fn fwd_f32_smem_bytes(head_dim: u32) -> u32 {
    let k_stride = if head_dim.is_multiple_of(2) { head_dim + 1 } else { head_dim };
    (16 * head_dim + 32 * k_stride + 32 * head_dim) * 4
}

/// The d512 f32 prefill kernel's: V is read into K's buffer after S, so Q and K only.
pub const fn fwd_f32_d512_smem_bytes(head_dim: u32) -> u32 {
    let k_stride = if head_dim.is_multiple_of(2) { head_dim + 1 } else { head_dim };
    (16 * head_dim + 32 * k_stride) * 4
}

/// Prefill f16/bf16 instances, `FwdTraits<D>` in kernels/fwd_sm80.cu: threads, block_m,
/// block_n, (block_m·D + stages·2·block_n·D)·2 bytes.
macro_rules! fwd_tc {
    (
        $name:literal, $dtype:ident, $d:literal, $variant:ident,
        $threads:literal, $rows:literal, $keys:literal, $smem:literal
    ) => {
        Instance {
            name: $name,
            family: Family::Fwd,
            arch: Arch::Sm80,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::$variant,
            threads: $threads,
            block_rows: $rows,
            key_block: $keys,
            col_splits: 1,
            smem: Smem::Bytes($smem),
        }
    };
}

/// Hopper prefill instances, `HopperTraits<D, variant>` in kernels/fwd_sm90.cu: a producer
/// warpgroup and `rows / 64` consumer warpgroups (threads = 128 · (1 + rows / 64)), block_n keys;
/// shared memory 1024 (alignment slack) + Q buffers·rows·P·2 + stages·2·block_n·P·2 + barriers
/// (one per Q buffer, two when persistent, four per stage)·8 + 8 (persistent: the tile slot) bytes,
/// and, for the cluster split (d64 `_mods`), padding to 16 bytes, a 16-byte mbarrier slot and
/// consumers·(D/8 + 1)·128·16 bytes of the other block's partial; P is D rounded up to whole
/// 64-column panels (d96's tiles are d128's).
macro_rules! fwd_sm90 {
    ($name:literal, $dtype:ident, $d:literal, $variant:ident, $threads:literal, $rows:literal, $keys:literal, $smem:literal) => {
        Instance {
            name: $name,
            family: Family::Fwd,
            arch: Arch::Sm90a,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::$variant,
            threads: $threads,
            block_rows: $rows,
            key_block: $keys,
            col_splits: 1,
            smem: Smem::Bytes($smem),
        }
    };
}

/// Threads of every decode block: 4 warps (kernels/decode_sm80.cu).
pub const DECODE_THREADS: u32 = 128;
/// Query rows of every decode block: one m16 tile of (q head, query) rows.
pub const DECODE_BLOCK_ROWS: u32 = 16;
/// Keys a decode block advances per round, 4 warps × 16 keys: splits are whole rounds.
pub const DECODE_KEYS_PER_ROUND: u32 = 64;

/// Decode instances, `Traits<D>` / `TraitsF32<D>` in kernels/decode_sm80.cu; shared memory
/// f16/bf16 (16·D + 4·stages·2·16·D)·2 bytes (3 stages up to D = 128, 2 at 256), f32
/// (16·D + 4·2·16·(D + 4) + 4·16·16)·4 bytes.
macro_rules! decode {
    ($name:literal, $dtype:ident, $d:literal, $variant:ident, $smem:literal) => {
        Instance {
            name: $name,
            family: Family::Decode,
            arch: Arch::Sm80,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::$variant,
            threads: DECODE_THREADS,
            block_rows: DECODE_BLOCK_ROWS,
            key_block: DECODE_KEYS_PER_ROUND,
            col_splits: 1,
            smem: Smem::Bytes($smem),
        }
    };
}

/// The decode's combine launch (kernels/decode_sm90.cu): one per dtype and head dim of the
/// decode instances, serving their plain and `_mod` splits; the decode's 128 threads and 16-row
/// tiles, no keys, no dynamic shared memory.
macro_rules! decode_combine {
    ($name:literal, $dtype:ident, $d:literal) => {
        Instance {
            name: $name,
            family: Family::DecodeCombine,
            arch: Arch::Sm90a,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::Both,
            threads: DECODE_THREADS,
            block_rows: DECODE_BLOCK_ROWS,
            key_block: 0,
            col_splits: 1,
            smem: Smem::Bytes(0),
        }
    };
}

/// Dynamic shared memory of the f32 backward kernel: K and V (16 rows padded to an odd
/// stride), Q and dO (16 rows), P and dS (16 × 17), lse and D (16 each), f32; as
/// `fattn::bwd::f32::smem_floats` in kernels/bwd_sm80.cu.
pub const fn bwd_f32_smem_bytes(head_dim: u32) -> u32 {
    bwd_f32_smem_bytes_block(16, head_dim)
}

/// The same for the d512 f32 backward instance, whose tiles hold 8 rows and 8 keys.
pub const fn bwd_f32_d512_smem_bytes(head_dim: u32) -> u32 {
    bwd_f32_smem_bytes_block(8, head_dim)
}

const fn bwd_f32_smem_bytes_block(block: u32, head_dim: u32) -> u32 {
    let k_stride = if head_dim.is_multiple_of(2) { head_dim + 1 } else { head_dim };
    (2 * block * k_stride + 2 * block * head_dim + 2 * block * (block + 1) + 2 * block) * 4
}

/// Dynamic shared memory of the d128 f16/bf16 backward's large-smem tile (`BwdTraitsLarge<128>`
/// in kernels/bwd_sm80.cu): K and V (128 keys), two stages of Q and dO (64 rows) and a dS tile
/// (128 × 64) in 16-bit, two stages of lse and D (64 rows, f32). For GPUs whose blocks may opt
/// into it (sm_80, sm_90); the 99 KiB tile runs elsewhere.
pub const BWD_D128_LARGE_SMEM: u32 = (2 * 128 * 128 + 2 * 2 * 64 * 128 + 128 * 64) * 2 + 2 * 2 * 64 * 4;

/// The dynamic shared memory of `inst`'s large-smem tile, whose entry points are
/// `<name>_l` and `<name>_l_varlen`; 0 where it has none (every instance but the d128 f16/bf16
/// backward). Checked against the kernel by build.rs.
pub fn bwd_large_smem(inst: &Instance) -> u32 {
    match (inst.family, inst.arch, inst.dtype, inst.head_dim) {
        (Family::Bwd, Arch::Sm80, Dtype::F16 | Dtype::BF16, 128) => BWD_D128_LARGE_SMEM,
        _ => 0,
    }
}

/// Backward f16/bf16 instances, `BwdTraits<D>` in kernels/bwd_sm80.cu: threads (warps · 32),
/// query rows per item (kBlockM), keys per block (16 · warps), column splits, and
/// (2·keys·D + 2·stages·rows·D + dS tile)·2 + 2·stages·rows·4 bytes.
macro_rules! bwd_tc {
    (
        $name:literal, $dtype:ident, $d:literal, $variant:ident,
        $threads:literal, $rows:literal, $keys:literal, $col_splits:literal, $smem:literal
    ) => {
        Instance {
            name: $name,
            family: Family::Bwd,
            arch: Arch::Sm80,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::$variant,
            threads: $threads,
            block_rows: $rows,
            key_block: $keys,
            col_splits: $col_splits,
            smem: Smem::Bytes($smem),
        }
    };
}

/// The backward's preprocess (8 warps, a query row each) and convert (128 threads per output
/// row) in `$dtype`; both serve every head dim and read no keys.
macro_rules! bwd_sm90 {
    ($name:literal, $dtype:ident, $d:literal, $variant:ident, $rows:literal, $smem:literal) => {
        Instance {
            name: $name,
            family: Family::Bwd,
            arch: Arch::Sm90a,
            dtype: Dtype::$dtype,
            head_dim: $d,
            variant: Variant::$variant,
            threads: 384,
            block_rows: $rows,
            key_block: 128,
            col_splits: 1,
            smem: Smem::Bytes($smem),
        }
    };
}

macro_rules! bwd_aux {
    ($family:ident, $name:literal, $dtype:ident, $threads:literal, $rows:literal) => {
        Instance {
            name: $name,
            family: Family::$family,
            arch: Arch::Sm80,
            dtype: Dtype::$dtype,
            head_dim: 512,
            variant: Variant::Both,
            threads: $threads,
            block_rows: $rows,
            key_block: 0,
            col_splits: 1,
            smem: Smem::Bytes(0),
        }
    };
}

/// Every kernel instance, in the order of the entry points in each file's PTX.
pub const INSTANCES: &[Instance] = &[
    // kernels/fwd_sm90.cu (dense f16/bf16 on compute capability 9.0)
    fwd_sm90!("fattn_fwd_f16_d64_sm90", F16, 64, Plain, 512, 192, 128, 148616),
    fwd_sm90!("fattn_fwd_f16_d64_mods_sm90", F16, 64, Mods, 384, 128, 128, 152704),
    fwd_sm90!("fattn_fwd_f16_d128_sm90", F16, 128, Plain, 384, 128, 128, 197736),
    fwd_sm90!("fattn_fwd_f16_d128_mods_sm90", F16, 128, Mods, 384, 128, 128, 164936),
    fwd_sm90!("fattn_fwd_bf16_d64_sm90", BF16, 64, Plain, 512, 192, 128, 148616),
    fwd_sm90!("fattn_fwd_bf16_d64_mods_sm90", BF16, 64, Mods, 384, 128, 128, 152704),
    fwd_sm90!("fattn_fwd_bf16_d128_sm90", BF16, 128, Plain, 384, 128, 128, 197736),
    fwd_sm90!("fattn_fwd_bf16_d128_mods_sm90", BF16, 128, Mods, 384, 128, 128, 164936),
    fwd_sm90!("fattn_fwd_f16_d192_sm90", F16, 192, Plain, 384, 128, 64, 197736),
    fwd_sm90!("fattn_fwd_f16_d192_mods_sm90", F16, 192, Mods, 384, 128, 64, 197736),
    fwd_sm90!("fattn_fwd_f16_d256_sm90", F16, 256, Plain, 384, 128, 64, 197704),
    fwd_sm90!("fattn_fwd_f16_d256_mods_sm90", F16, 256, Mods, 384, 128, 64, 197704),
    fwd_sm90!("fattn_fwd_bf16_d192_sm90", BF16, 192, Plain, 384, 128, 64, 197736),
    fwd_sm90!("fattn_fwd_bf16_d192_mods_sm90", BF16, 192, Mods, 384, 128, 64, 197736),
    fwd_sm90!("fattn_fwd_bf16_d256_sm90", BF16, 256, Plain, 384, 128, 64, 197704),
    fwd_sm90!("fattn_fwd_bf16_d256_mods_sm90", BF16, 256, Mods, 384, 128, 64, 197704),
    // d96: plain only. Softcap/ALiBi at head dims 72-96 run on d128's `_mods` instance,
    // zero-padded: the d96 `_mods` pair took fwd_sm90's compile (front end + ptxas, one after
    // the other on session 59's 2-vCPU VM) from 59.7 to 72.6 s, the plain pair from 57.6 to
    // 59.7 (issue 14's build-time bar), for problems (Phi-3 has neither) rare at these dims.
    fwd_sm90!("fattn_fwd_f16_d96_sm90", F16, 96, Plain, 384, 128, 128, 197736),
    fwd_sm90!("fattn_fwd_bf16_d96_sm90", BF16, 96, Plain, 384, 128, 128, 197736),
    fwd_sm90!("fattn_fwd_f16_d128_wide_sm90", F16, 128, Wide, 384, 128, 176, 214104),
    fwd_sm90!("fattn_fwd_bf16_d128_wide_sm90", BF16, 128, Wide, 384, 128, 176, 214104),
    fwd_sm90!("fattn_fwd_f16_d256_wide_sm90", F16, 256, Wide, 384, 128, 80, 230472),
    fwd_sm90!("fattn_fwd_bf16_d256_wide_sm90", BF16, 256, Wide, 384, 128, 80, 230472),
    // kernels/bwd_sm90.cu
    bwd_sm90!("fattn_bwd_f16_d64_sm90", F16, 64, Plain, 128, 166952),
    bwd_sm90!("fattn_bwd_f16_d64_mods_sm90", F16, 64, Mods, 128, 166952),
    bwd_sm90!("fattn_bwd_f16_d128_sm90", F16, 128, Plain, 64, 165928),
    bwd_sm90!("fattn_bwd_f16_d128_mods_sm90", F16, 128, Mods, 64, 165928),
    bwd_sm90!("fattn_bwd_bf16_d64_sm90", BF16, 64, Plain, 128, 166952),
    bwd_sm90!("fattn_bwd_bf16_d64_mods_sm90", BF16, 64, Mods, 128, 166952),
    bwd_sm90!("fattn_bwd_bf16_d128_sm90", BF16, 128, Plain, 64, 165928),
    bwd_sm90!("fattn_bwd_bf16_d128_mods_sm90", BF16, 128, Mods, 64, 165928),
    // kernels/fwd_sm80.cu. `Both`: one kernel per dtype and head dim whose softcap/ALiBi code
    // runs behind a run-time switch (`mods_on`), where a plain and a `_mods` kernel each were
    // until session 62: the pairs took 40% more of this file's build (64.9 s against 38.8 s of
    // CPU for the front end and both cubins, session 61's VM). d64 keeps its pair: merged, its
    // plain problems ran the `_mods` kernel's schedule, 0.9-1.5% slower (lab/README.md,
    // sessions 61-62).
    fwd_tc!("fattn_fwd_f16_d32", F16, 32, Both, 128, 128, 64, 32768),
    fwd_tc!("fattn_fwd_f16_d64", F16, 64, Plain, 128, 128, 64, 65536),
    fwd_tc!("fattn_fwd_f16_d64_mods", F16, 64, Mods, 128, 128, 64, 65536),
    fwd_tc!("fattn_fwd_f16_d96", F16, 96, Both, 128, 128, 64, 73728),
    fwd_tc!("fattn_fwd_f16_d128", F16, 128, Both, 128, 128, 64, 98304),
    fwd_tc!("fattn_fwd_f16_d256", F16, 256, Both, 128, 64, 32, 98304),
    fwd_tc!("fattn_fwd_f16_d512", F16, 512, Both, 128, 32, 16, 98304),
    fwd_tc!("fattn_fwd_bf16_d32", BF16, 32, Both, 128, 128, 64, 32768),
    fwd_tc!("fattn_fwd_bf16_d64", BF16, 64, Plain, 128, 128, 64, 65536),
    fwd_tc!("fattn_fwd_bf16_d64_mods", BF16, 64, Mods, 128, 128, 64, 65536),
    fwd_tc!("fattn_fwd_bf16_d96", BF16, 96, Both, 128, 128, 64, 73728),
    fwd_tc!("fattn_fwd_bf16_d128", BF16, 128, Both, 128, 128, 64, 98304),
    fwd_tc!("fattn_fwd_bf16_d256", BF16, 256, Both, 128, 64, 32, 98304),
    fwd_tc!("fattn_fwd_bf16_d512", BF16, 512, Both, 128, 32, 16, 98304),
    Instance {
        name: "fattn_fwd_f32",
        family: Family::Fwd,
        arch: Arch::Sm80,
        dtype: Dtype::F32,
        head_dim: 256,
        variant: Variant::Both,
        threads: 128,
        block_rows: 16,
        key_block: 32,
        col_splits: 1,
        smem: Smem::PerHeadDim(fwd_f32_smem_bytes),
    },
    Instance {
        name: "fattn_fwd_f32_d512",
        family: Family::Fwd,
        arch: Arch::Sm80,
        dtype: Dtype::F32,
        head_dim: 512,
        variant: Variant::Both,
        threads: 128,
        block_rows: 16,
        key_block: 32,
        col_splits: 1,
        smem: Smem::PerHeadDim(fwd_f32_d512_smem_bytes),
    },
    // kernels/decode_sm80.cu
    decode!("fattn_decode_bf16_d64", BF16, 64, Plain, 51200),
    decode!("fattn_decode_bf16_d64_mod", BF16, 64, Mods, 51200),
    decode!("fattn_decode_bf16_d128", BF16, 128, Plain, 102400),
    decode!("fattn_decode_bf16_d128_mod", BF16, 128, Mods, 102400),
    decode!("fattn_decode_bf16_d256", BF16, 256, Plain, 139264),
    decode!("fattn_decode_bf16_d256_mod", BF16, 256, Mods, 139264),
    decode!("fattn_decode_f16_d64", F16, 64, Plain, 51200),
    decode!("fattn_decode_f16_d64_mod", F16, 64, Mods, 51200),
    decode!("fattn_decode_f16_d128", F16, 128, Plain, 102400),
    decode!("fattn_decode_f16_d128_mod", F16, 128, Mods, 102400),
    decode!("fattn_decode_f16_d256", F16, 256, Plain, 139264),
    decode!("fattn_decode_f16_d256_mod", F16, 256, Mods, 139264),
    decode!("fattn_decode_f32_d64", F32, 64, Plain, 43008),
    decode!("fattn_decode_f32_d64_mod", F32, 64, Mods, 43008),
    decode!("fattn_decode_f32_d128", F32, 128, Plain, 79872),
    decode!("fattn_decode_f32_d128_mod", F32, 128, Mods, 79872),
    decode!("fattn_decode_f32_d256", F32, 256, Plain, 153600),
    decode!("fattn_decode_f32_d256_mod", F32, 256, Mods, 153600),
    // kernels/decode_sm90.cu
    decode_combine!("fattn_decode_combine_bf16_d64", BF16, 64),
    decode_combine!("fattn_decode_combine_bf16_d128", BF16, 128),
    decode_combine!("fattn_decode_combine_bf16_d256", BF16, 256),
    decode_combine!("fattn_decode_combine_f16_d64", F16, 64),
    decode_combine!("fattn_decode_combine_f16_d128", F16, 128),
    decode_combine!("fattn_decode_combine_f16_d256", F16, 256),
    decode_combine!("fattn_decode_combine_f32_d64", F32, 64),
    decode_combine!("fattn_decode_combine_f32_d128", F32, 128),
    decode_combine!("fattn_decode_combine_f32_d256", F32, 256),
    // kernels/bwd_sm80.cu. `Both`, as fwd_sm80's: one kernel per dtype and head dim, whose
    // element pass branches once per tile on `mods_on` (the whole pass, so that ptxas does not
    // predicate the softcap/ALiBi instructions into the plain problems' path; lab/README.md,
    // sessions 61-62).
    bwd_tc!("fattn_bwd_f16_d32", F16, 32, Both, 256, 64, 128, 1, 50176),
    bwd_tc!("fattn_bwd_f16_d64", F16, 64, Both, 256, 64, 128, 1, 82944),
    bwd_tc!("fattn_bwd_f16_d96", F16, 96, Both, 256, 64, 128, 1, 90624),
    bwd_tc!("fattn_bwd_f16_d128", F16, 128, Both, 256, 64, 128, 1, 98816),
    bwd_tc!("fattn_bwd_f16_d256", F16, 256, Both, 128, 32, 64, 2, 98560),
    bwd_tc!("fattn_bwd_f16_d384", F16, 384, Both, 64, 32, 32, 3, 98560),
    bwd_tc!("fattn_bwd_f16_d512", F16, 512, Both, 32, 32, 16, 4, 98560),
    bwd_tc!("fattn_bwd_bf16_d32", BF16, 32, Both, 256, 64, 128, 1, 50176),
    bwd_tc!("fattn_bwd_bf16_d64", BF16, 64, Both, 256, 64, 128, 1, 82944),
    bwd_tc!("fattn_bwd_bf16_d96", BF16, 96, Both, 256, 64, 128, 1, 90624),
    bwd_tc!("fattn_bwd_bf16_d128", BF16, 128, Both, 256, 64, 128, 1, 98816),
    bwd_tc!("fattn_bwd_bf16_d256", BF16, 256, Both, 128, 32, 64, 2, 98560),
    bwd_tc!("fattn_bwd_bf16_d384", BF16, 384, Both, 64, 32, 32, 3, 98560),
    bwd_tc!("fattn_bwd_bf16_d512", BF16, 512, Both, 32, 32, 16, 4, 98560),
    Instance {
        name: "fattn_bwd_f32",
        family: Family::Bwd,
        arch: Arch::Sm80,
        dtype: Dtype::F32,
        head_dim: 256,
        variant: Variant::Both,
        threads: 256,
        block_rows: 16,
        key_block: 16,
        col_splits: 1,
        smem: Smem::PerHeadDim(bwd_f32_smem_bytes),
    },
    Instance {
        name: "fattn_bwd_f32_d512",
        family: Family::Bwd,
        arch: Arch::Sm80,
        dtype: Dtype::F32,
        head_dim: 512,
        variant: Variant::Both,
        threads: 256,
        block_rows: 8,
        key_block: 8,
        col_splits: 1,
        smem: Smem::PerHeadDim(bwd_f32_d512_smem_bytes),
    },
    bwd_aux!(BwdPreprocess, "fattn_bwd_preprocess_f16", F16, 256, 8),
    bwd_aux!(BwdPreprocess, "fattn_bwd_preprocess_bf16", BF16, 256, 8),
    bwd_aux!(BwdPreprocess, "fattn_bwd_preprocess_f32", F32, 256, 8),
    bwd_aux!(BwdConvert, "fattn_bwd_convert_f16", F16, 128, 1),
    bwd_aux!(BwdConvert, "fattn_bwd_convert_bf16", BF16, 128, 1),
    bwd_aux!(BwdConvert, "fattn_bwd_convert_f32", F32, 128, 1),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn dtype_name(d: Dtype) -> &'static str {
        match d {
            Dtype::F16 => "f16",
            Dtype::BF16 => "bf16",
            Dtype::F32 => "f32",
        }
    }

    #[test]
    fn names_follow_the_fields_and_are_unique() {
        for (i, inst) in INSTANCES.iter().enumerate() {
            let expected = match (inst.family, inst.dtype, inst.variant) {
                (Family::Fwd, Dtype::F32, _) if inst.head_dim == 256 => "fattn_fwd_f32".to_string(),
                (Family::Fwd, Dtype::F32, _) => format!("fattn_fwd_f32_d{}", inst.head_dim),
                (Family::Fwd, d, v) => format!(
                    "fattn_fwd_{}_d{}{}{}",
                    dtype_name(d),
                    inst.head_dim,
                    match v {
                        Variant::Mods => "_mods",
                        Variant::Wide => "_wide",
                        _ => "",
                    },
                    if inst.arch == Arch::Sm90a { "_sm90" } else { "" }
                ),
                (Family::Decode, d, v) => format!(
                    "fattn_decode_{}_d{}{}",
                    dtype_name(d),
                    inst.head_dim,
                    if v == Variant::Mods { "_mod" } else { "" }
                ),
                (Family::DecodeCombine, d, _) => format!("fattn_decode_combine_{}_d{}", dtype_name(d), inst.head_dim),
                (Family::Bwd, Dtype::F32, _) if inst.head_dim == 256 => "fattn_bwd_f32".to_string(),
                (Family::Bwd, Dtype::F32, _) => format!("fattn_bwd_f32_d{}", inst.head_dim),
                (Family::Bwd, d, v) => format!(
                    "fattn_bwd_{}_d{}{}{}",
                    dtype_name(d),
                    inst.head_dim,
                    if v == Variant::Mods { "_mods" } else { "" },
                    if inst.arch == Arch::Sm90a { "_sm90" } else { "" }
                ),
                (Family::BwdPreprocess, d, _) => format!("fattn_bwd_preprocess_{}", dtype_name(d)),
                (Family::BwdConvert, d, _) => format!("fattn_bwd_convert_{}", dtype_name(d)),
            };
            assert_eq!(inst.name, expected);
            assert!(INSTANCES[..i].iter().all(|other| other.name != inst.name), "{} twice", inst.name);
            assert_eq!(
                SOURCES.iter().filter(|s| s.builds(inst)).count(),
                1,
                "{}: one kernel file builds it",
                inst.name
            );
            // Only the backward's generated entry points check a column split (build.rs).
            assert!(inst.col_splits == 1 || inst.family == Family::Bwd, "{}: column split", inst.name);
            assert!(inst.col_splits >= 1 && inst.head_dim % inst.col_splits == 0, "{}: column split", inst.name);
        }
    }

    #[test]
    fn every_variant_of_every_dtype_exists_up_to_the_largest_head_dim() {
        for family in Family::ALL {
            for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32] {
                for mods in [false, true] {
                    let max = INSTANCES
                        .iter()
                        .filter(|i| i.family == family && i.dtype == dtype && i.variant.serves(mods))
                        .map(|i| i.head_dim)
                        .max();
                    // Prefill and the backward serve every head dim up to MAX_HEAD_DIM;
                    // decode hands head dims above 256 to prefill (src/cuda/heuristics.rs).
                    let expected = match family {
                        Family::Fwd | Family::Bwd | Family::BwdPreprocess | Family::BwdConvert => 512,
                        Family::Decode | Family::DecodeCombine => 256,
                    };
                    assert_eq!(max, Some(expected), "{family:?} {dtype:?} mods {mods}");
                }
            }
        }
    }

    #[test]
    fn large_backward_tiles_fit_sm80_and_sm90() {
        // The large-smem tiles run where the device's opt-in limit holds them: sm_80 allows
        // 163 KiB a block, sm_90 227 KiB.
        for inst in INSTANCES {
            let large = bwd_large_smem(inst);
            assert!(large == 0 || (large > 99 * 1024 && large <= 163 * 1024), "{}: {large}", inst.name);
        }
        assert_eq!(BWD_D128_LARGE_SMEM, 148480);
    }

    #[test]
    fn hopper_tiles_fit_an_h100_block() {
        // Compute capability 9.0 lets a block opt into 227 KiB of shared memory.
        for inst in INSTANCES.iter().filter(|i| i.arch == Arch::Sm90a && i.family != Family::DecodeCombine) {
            assert!(inst.smem_bytes(inst.head_dim) <= 227 * 1024, "{}", inst.name);
            // A producer warpgroup and consumers of 64 rows each: query rows in the forward,
            // keys in the backward (kernels/bwd_sm90.cu).
            let consumer_rows = if inst.family == Family::Bwd { inst.key_block } else { inst.block_rows };
            assert_eq!(inst.threads, 128 * (1 + consumer_rows / 64), "{}: a producer and 64-row consumers", inst.name);
        }
    }

    #[test]
    fn prefill_and_backward_tiles_fit_every_sm80_gpu() {
        // sm_86/sm_89 give a block at most 99 KiB; one build runs on every sm_80+ GPU.
        let sm80 = |i: &&Instance| i.arch == Arch::Sm80 && matches!(i.family, Family::Fwd | Family::Bwd);
        for inst in INSTANCES.iter().filter(sm80) {
            for d in 1..=inst.head_dim {
                assert!(inst.smem_bytes(d) <= 99 * 1024, "{} at head dim {d}", inst.name);
            }
        }
    }
}
