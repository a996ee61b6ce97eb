//! The parameter struct every kernel takes by value, `FattnParams` in
//! kernels/common/params.cuh, declared once as a list of fields with their byte offsets.
//!
//! The list defines the Rust struct and asserts each offset (and the size) at compile time;
//! build.rs includes this file and writes the same numbers as C++ `static_assert`s on the
//! C++ struct into the header every kernel build includes. A field added, moved or retyped on
//! one side only fails to compile on that side.
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
    pub struct FattnParams, size 288 {
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
        /// `(batch, heads, seq_q)` f32 log-sum-exp output (natural log, -inf for a row that
        /// sees no key); 0 when not wanted.
        lse: u64 = 200,
        // ---- reserved: no kernel reads these yet; always zero ----
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
    }
}
