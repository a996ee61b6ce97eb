//! The parameter structs the kernels take by value, in kernels/common/params.cuh, each
//! declared once as a list of fields with their byte offsets: `FattnParams` (every forward
//! kernel), and the backward's `FattnBwdParams` (which embeds `FattnParams`) and
//! `FattnBwdConvertParams`.
//!
//! Each list defines the Rust struct and asserts each offset (and the size) at compile time;
//! build.rs includes this file and writes the same numbers ([`STRUCTS`]) as C++
//! `static_assert`s on the C++ structs into the header every kernel build includes. A field
//! added, moved or retyped on one side only fails to compile on that side.
//!
//! Plain data on purpose: build.rs `include!`s it, so it uses nothing but `core`.

/// Declares `$name` as a `#[repr(C)]` struct with the listed fields, asserts each field's
/// offset and the struct's size, and records the list in `$name::FIELDS`.
macro_rules! ffi_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident, size $size:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $offset:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        // Read by build.rs, which writes the C++ asserts from them.
        #[allow(dead_code)]
        impl $name {
            /// Every field's name and byte offset, in declaration order.
            pub const FIELDS: &'static [(&'static str, usize)] = &[$((stringify!($field), $offset)),*];
            /// `size_of::<Self>()`, as the C++ side must see it.
            pub const SIZE: usize = $size;
        }

        $( const _: () = assert!(core::mem::offset_of!($name, $field) == $offset); )*
        const _: () = assert!(core::mem::size_of::<$name>() == $size);
    };
}

ffi_struct! {
    /// The kernels' parameters. Device pointers are `u64` addresses with the tensors' start
    /// offsets already applied (0 = null); strides are in elements; the head dimension is
    /// contiguous. Fields a kernel does not read stay zero (`Default`).
    pub struct FattnParams, size 312 {
        // ---- every kernel ----
        q: u64 = 0,
        k: u64 = 8,
        v: u64 = 16,
        o: u64 = 24,
        /// `(batch, heads)` f32 ALiBi slopes, contiguous; 0 when ALiBi is off.
        alibi_slopes: u64 = 32,
        q_batch_stride: i64 = 40,
        q_seq_stride: i64 = 48,
        q_head_stride: i64 = 56,
        k_batch_stride: i64 = 64,
        k_seq_stride: i64 = 72,
        k_head_stride: i64 = 80,
        v_batch_stride: i64 = 88,
        v_seq_stride: i64 = 96,
        v_head_stride: i64 = 104,
        o_batch_stride: i64 = 112,
        o_seq_stride: i64 = 120,
        o_head_stride: i64 = 128,
        batch: i32 = 136,
        heads: i32 = 140,
        kv_heads: i32 = 144,
        seq_q: i32 = 148,
        seq_k: i32 = 152,
        head_dim: i32 = 156,
        /// `heads / kv_heads`: q head `h` reads kv head `h / kv_group`.
        kv_group: i32 = 160,
        /// Bottom-right windows; -1 = unbounded (causal is right = 0).
        window_left: i32 = 164,
        window_right: i32 = 168,
        /// 1 when every q/k/v row start is 16-byte aligned and rows are whole 16-byte chunks.
        vec_in: i32 = 172,
        /// 1 when every output row start is 16-byte aligned and rows are whole 16-byte chunks.
        vec_out: i32 = 176,
        /// `softmax_scale · log2(e)`.
        scale_log2: f32 = 180,
        /// `softmax_scale / softcap`; 0 without a softcap.
        softcap_inv_scaled: f32 = 184,
        /// `softcap · log2(e)`; 0 without a softcap.
        softcap_log2: f32 = 188,
        /// `softmax_scale`.
        scale: f32 = 192,
        /// The softcap; 0 = off.
        softcap: f32 = 196,
        /// `(batch, heads, seq_q)` f32 natural-log log-sum-exp per row (-inf: no visible key):
        /// the forward writes it when not 0, the backward reads it.
        lse: u64 = 200,
        // ---- packed batches (0 when dense) ----
        /// `(batch + 1)` i32 cumulative sequence lengths of packed (varlen) q and k/v.
        cu_seqlens_q: u64 = 208,
        cu_seqlens_k: u64 = 216,
        /// Paged KV: `(batch, pages)` i32 page indices, their batch stride, keys per page.
        block_table: u64 = 224,
        block_table_batch_stride: i64 = 232,
        page_block_size: i32 = 240,
        // ---- split-key decode (kernels/decode_sm80.cu) ----
        num_splits: i32 = 244,
        /// `[num_splits][batch · seq_q · heads][D]` f32 partial outputs; 0 with one split.
        partial_o: u64 = 248,
        /// `[num_splits][batch · seq_q · heads][2]` f32 (max in log2 units, sum).
        partial_ml: u64 = 256,
        /// `[batch][kv_heads · row_groups]` u32 arrival counters, zero before and after a launch.
        tile_counters: u64 = 264,
        /// `ceil(kv_group · seq_q / 16)`.
        row_groups: i32 = 272,
        /// The union of the rows' visible keys, `[key_begin, key_end)`, in slices of
        /// `keys_per_split` keys.
        key_begin: i32 = 276,
        key_end: i32 = 280,
        keys_per_split: i32 = 284,
        // ---- packed batches: multimodal prefix ranges ----
        /// `(batch, max_mm_ranges, 2)` i32 `[start, end)` key positions of each sequence
        /// (`start == end`: none), contiguous; 0 when there are none.
        mm_ranges: u64 = 288,
        max_mm_ranges: i32 = 296,
        /// Split-key decode: 0 when the last split block of each tile merges the splits in the
        /// split kernel; else a separate launch merges them (src/cuda/decode.rs,
        /// kernels/decode_sm90.cu) and the split blocks only store partials: one per block (1)
        /// or one per warp, with no block merge (2).
        defer_combine: i32 = 300,
        // ---- dense prefill and backward: the grid's tile order ----
        /// T > 0: the grid's last T groups' tiles go heaviest first across those groups, so
        /// that a grid under a right-bounded mask ends on its lightest tiles; 0: each group's
        /// tiles consecutive, heaviest first. Forward: (batch, head) pairs and their query
        /// blocks (kernels/common/grid.cuh `query_block_tail`); backward: (batch, kv head, kv
        /// split, column split) groups and their key blocks (kernels/common/bwd_index.cuh
        /// `bwd_cta`). `heuristics::lightest_last_pairs` / `lightest_last_groups`.
        tail_groups: i32 = 304,
        /// Explicit padding, so that every byte is initialized.
        pad_fwd_: i32 = 308,
    }
}

ffi_struct! {
    /// The backward's parameters (kernels/bwd_sm80.cu): the forward's (`o` and its strides are
    /// the forward's output, `lse` its log-sum-exp, `scale` multiplies dQ and dK), then the
    /// backward's own. Workspaces are f32; `seq_q_pad` rows per (batch, head).
    pub struct FattnBwdParams, size 440 {
        fwd: FattnParams = 0,
        /// dO, `(batch, seq_q, heads, head_dim)`, head dim contiguous, input dtype.
        d_o: u64 = 312,
        do_batch_stride: i64 = 320,
        do_seq_stride: i64 = 328,
        do_head_stride: i64 = 336,
        /// `(batch, heads, seq_q_pad)` f32: D = rowsum(dO∘O) and lse·log2 e, written by the
        /// preprocess.
        dsum: u64 = 344,
        lse_log2: u64 = 352,
        /// `(batch, heads, seq_q_pad, head_dim_inst)` f32, zeroed before the main kernel.
        dq_accum: u64 = 360,
        /// `(batch, kv_heads, seq_k_pad, head_dim_inst)` f32, zeroed; 0 unless `kv_splits > 1`.
        dk_accum: u64 = 368,
        dv_accum: u64 = 376,
        /// `(batch, seq_k, kv_heads, head_dim)` contiguous outputs (written when `kv_splits == 1`).
        dk: u64 = 384,
        dv: u64 = 392,
        /// `seq_q` rounded up to a multiple of 128.
        seq_q_pad: i32 = 400,
        /// Key blocks × the instance's key block.
        seq_k_pad: i32 = 404,
        /// Row length of the accumulators: the instance's head dim (f32 kernel: head_dim).
        head_dim_inst: i32 = 408,
        /// CTAs per kv head along its group, and q heads per such CTA.
        kv_splits: i32 = 412,
        heads_per_split: i32 = 416,
        /// 1 when every dO row start is 16-byte aligned and rows are whole 16-byte chunks.
        vec_do: i32 = 420,
        /// Rows per head of the q-row workspaces (dsum, lse_log2, dq_accum) and of the key
        /// workspaces (dk/dv_accum): dense `seq_q_pad`/`seq_k_pad`; packed
        /// `total + PACKED_GAP · batch`, sequence b from `packed_ws_base(cu[b], b)`.
        ws_rows_q: i32 = 424,
        ws_rows_k: i32 = 428,
        /// Packed: `total_q`, the row stride of the `(heads, total_q)` LSE; 0 dense.
        total_q: i32 = 432,
        /// Explicit tail padding, so that every byte passed to the kernels is initialized.
        pad_bwd_: i32 = 436,
    }
}

ffi_struct! {
    /// The backward's convert kernel: `(batch, heads, seq_pad, d_inst)` f32 accumulator ×
    /// `scale` → `(batch, seq, heads, head_dim)` contiguous output in the input dtype.
    pub struct FattnBwdConvertParams, size 56 {
        src: u64 = 0,
        dst: u64 = 8,
        batch: i32 = 16,
        heads: i32 = 20,
        seq: i32 = 24,
        head_dim: i32 = 28,
        seq_pad: i32 = 32,
        d_inst: i32 = 36,
        scale: f32 = 40,
        /// Explicit tail padding, so that every byte passed to the kernel is initialized.
        pad_: i32 = 44,
        /// Packed: `(batch + 1)` i32 cumulative row counts of the `(total, heads, head_dim)`
        /// output (`seq_pad` is then the accumulator's rows per head); 0 dense.
        cu_seqlens: u64 = 48,
    }
}

/// A `CUtensorMap` (the driver's TMA descriptor): 128 opaque bytes, 64-byte aligned, made on
/// the host by `cuTensorMapEncodeTiled` and read by the Hopper kernels' tile loads.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TmaDesc(pub [u64; 16]);

/// Division of `0 <= n < 2^31` by a launch constant `d >= 1` without a divide instruction
/// (kernels/common/grid.cuh `fast_divmod`): `n / d == (n · mul) >> (31 + shift)` with
/// `shift = ceil(log2 d)` and `mul = ceil(2^(31 + shift) / d)`, which fits in 32 bits. Exact:
/// `mul = 2^(31 + shift) / d + e` with `0 <= e < 1`, so `n · mul / 2^(31 + shift)` is the real
/// quotient `n / d` plus less than `n / 2^(31 + shift) < 2^-shift <= 1 / d`, and the real
/// quotient's fraction is at most `(d - 1) / d`: the floor is `n / d`. The Hopper forward names
/// each item's (batch, head, query block) with these: its divisions by the problem's constants
/// (a chain of `I2F`/`MUFU.RCP`/`F2I` each) were on every tile's critical path (session 47).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FastDiv {
    pub mul: u32,
    pub shift: u32,
}

impl FastDiv {
    /// The divider by `d`; `d == 0` gives the divider by 1 (the kernel never divides by a
    /// field it does not use).
    pub const fn new(d: u32) -> Self {
        let d = if d == 0 { 1 } else { d };
        let shift = u32::BITS - (d - 1).leading_zeros(); // ceil(log2 d), 0 for d = 1
        let mul = (1u64 << (31 + shift)).div_ceil(d as u64);
        FastDiv { mul: mul as u32, shift }
    }

    /// `n / d` as the kernel computes it (the tests check it against `/`).
    #[cfg(test)]
    pub const fn div(self, n: u32) -> u32 {
        ((n as u64 * self.mul as u64) >> (31 + self.shift)) as u32
    }
}

ffi_struct! {
    /// The Hopper forward's parameters (kernels/fwd_sm90.cu): tensor maps of q, k and v, 4-D
    /// `(head_dim, seq, heads, batch)` (innermost first) from the real strides, boxes of 64
    /// columns by the instance's rows (q) or keys (k, v) with the 128-byte swizzle; then the
    /// forward's parameters, whose fields keep their meaning.
    pub struct FattnHopperParams, size 960 {
        tma_q: TmaDesc = 0,
        tma_k: TmaDesc = 128,
        tma_v: TmaDesc = 256,
        fwd: FattnParams = 384,
        /// A u32 in device memory, zero at the launch (and left zero by the launch's last
        /// draw), from which the blocks of a persistent grid draw their next query tile
        /// (`atomicAdd`), or null: block b then takes tiles b, b + grid, ...
        /// (kernels/fwd_sm90.cu; src/cuda/prefill_sm90.rs says which).
        tile_counter: u64 = 696,
        /// 1: every sequence's query tiles move up by its last tile's padding, so that a
        /// causal problem's one partial tile is its cheapest, the top one
        /// (src/cuda/prefill_sm90.rs `partial_tile_top`); 0: no shift.
        partial_tile_top: i32 = 704,
        /// Strided persistent grids: how many of the last tiles the blocks share out by key
        /// blocks (stream-K, kernels/fwd_sm90.cu; src/cuda/prefill_sm90.rs `stream_k_tail`),
        /// or 0.
        sk_tail: i32 = 708,
        /// `[2 · grid][consumers][64 · head_dim + 128]` f32: the split tiles' partials.
        sk_partial: u64 = 712,
        /// `[grid][consumers]` u32, zero before the launch (and after it): each split tile's
        /// arrivals.
        sk_flags: u64 = 720,
        /// R > 1: a small grid of R · tiles blocks launched as clusters of R (2 today), each
        /// cluster splitting one tile's key blocks (kernels/fwd_sm90.cu; src/cuda/
        /// prefill_sm90.rs `pair_split`); 0: one block per tile.
        pair_split: i32 = 728,
        /// P > 1: a strided persistent grid's last `tiles % grid` tiles are each split into P
        /// contiguous ranges of key blocks, one per block (blocks 0 .. P · (tiles % grid)), whose
        /// partials go to `sk_partial` (`[tail tiles · P][consumers][(head_dim / 8 + 1) · 128]`
        /// float4) and whose arrivals `sk_flags` (`[tail tiles][consumers]`) counts
        /// (kernels/fwd_sm90.cu `kTailSplit`; src/cuda/prefill_sm90.rs `tail_pieces`); 0: none.
        tail_pieces: i32 = 732,
        /// 1: dense tiles store O with TMA through `tma_o` (each consumer warpgroup's staged
        /// rows, one 64 × 64 box per panel, where the boxes lie wholly inside the output; partial
        /// or shifted tiles and padded head dims keep the threads' stores); 0: 16-byte stores by
        /// every thread (always for packed batches, whose boxes would cross into the next
        /// sequence).
        o_tma: i32 = 736,
        /// 1: the key block that holds a tile's last visible key, when that key leaves a 16-key
        /// step of the block empty, runs only its first 64 keys through Q·Kᵀ (where those hold
        /// the key) and only its 16-key steps up to that key through P·V: the padded keys'
        /// scores are masked and their P is zero, so the result is the same; 0: every block at
        /// the full width (kernels/fwd_sm90.cu, `trim_last`).
        trim_last: i32 = 740,
        /// Dividers ([`FastDiv`]) by the query blocks of a (batch, head) pair, by the heads, and
        /// by the tail's pairs (`fwd.tail_groups`, 1 when 0): an item's (batch, head, query
        /// block) without a divide (kernels/common/grid.cuh `query_block_tail_by`).
        div_m: FastDiv = 744,
        div_heads: FastDiv = 752,
        div_pairs: FastDiv = 760,
        /// Strided grids with a split tail (`tail_pieces` or `sk_tail` set): the whole rounds
        /// of tiles every block runs before the tail (`tiles / grid`, or `(tiles - sk_tail) /
        /// grid`); 0 otherwise.
        whole_rounds: i32 = 768,
        /// 1: a strided persistent grid of the d128 instances launched as clusters of two,
        /// whose blocks run tiles `2i` and `2i + 1` (one (batch, head): set only when the
        /// query blocks per head and the grid are even) and each load half of every K and V
        /// tile into both (TMA multicast; kernels/fwd_sm90.cu `kMulticast`,
        /// src/cuda/prefill_sm90.rs `kv_multicast`); 0: every block loads its own.
        kv_multicast: i32 = 772,
        /// Explicit padding to the 64-byte alignment of `tma_o`.
        pad_hopper_: [u32; 14] = 776,
        /// The output's tensor map, 4-D `(head_dim, seq_q, heads, batch)`, boxes of 64 columns
        /// by 64 rows with the 128-byte swizzle; zeros when `o_tma` is 0.
        tma_o: TmaDesc = 832,
    }
}

ffi_struct! {
    /// The Hopper backward's parameters (kernels/bwd_sm90.cu): tensor maps of q, k, v and dO,
    /// 4-D `(head_dim, seq, heads, batch)` from the real strides, boxes of 64 columns by the
    /// instance's query rows (q, dO) or keys (k, v) with the 128-byte swizzle; then the
    /// backward's parameters, whose fields keep their meaning.
    pub struct FattnHopperBwdParams, size 960 {
        tma_q: TmaDesc = 0,
        tma_k: TmaDesc = 128,
        tma_v: TmaDesc = 256,
        tma_do: TmaDesc = 384,
        bwd: FattnBwdParams = 512,
        /// Explicit tail padding to the 64-byte alignment, so that every byte is initialized.
        pad_hopper_bwd_: [u64; 1] = 952,
    }
}

/// A struct's C++ name, its size and its fields' names and offsets.
pub type StructLayout = (&'static str, usize, &'static [(&'static str, usize)]);

/// Every struct of the family. Read by build.rs, which asserts them on the C++ structs.
#[allow(dead_code)]
pub const STRUCTS: &[StructLayout] = &[
    ("FattnParams", FattnParams::SIZE, FattnParams::FIELDS),
    ("FattnBwdParams", FattnBwdParams::SIZE, FattnBwdParams::FIELDS),
    ("FattnBwdConvertParams", FattnBwdConvertParams::SIZE, FattnBwdConvertParams::FIELDS),
    ("FattnHopperParams", FattnHopperParams::SIZE, FattnHopperParams::FIELDS),
    ("FattnHopperBwdParams", FattnHopperBwdParams::SIZE, FattnHopperBwdParams::FIELDS),
];

#[cfg(test)]
mod tests {
    use super::FastDiv;

    /// The kernel's division by multiplication against `/`: every divisor up to 4 096 (query
    /// blocks, heads, pairs) and the largest, at the dividends where it could go wrong (each
    /// multiple and its predecessor) and at the top of the range.
    #[test]
    fn fast_div_matches_division() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 33) as u32 // < 2^31
        };
        let top = i32::MAX as u32;
        let divisors = (1..=4096u32).chain([65_535, 65_537, 1 << 20, (1 << 30) + 1, top - 1, top]);
        for d in divisors {
            let f = FastDiv::new(d);
            let check = |n: u32| assert_eq!(f.div(n), n / d, "{n} / {d} (mul {}, shift {})", f.mul, f.shift);
            for n in [0, 1, d - 1, d, d + 1, top - 1, top, top - top % d, (top - top % d).saturating_sub(1)] {
                check(n.min(top));
            }
            for _ in 0..64 {
                let n = rand();
                check(n);
                let q = n / d;
                check((q * d).saturating_sub(1));
                check(q * d);
            }
        }
        assert_eq!(FastDiv::new(0), FastDiv::new(1));
    }
}
