// The parameter structs the kernels take by value: FattnParams (every forward kernel), and
// the backward's FattnBwdParams (which embeds it) and FattnBwdConvertParams. src/cuda/params.rs
// declares the same fields with their byte offsets; it asserts them on the Rust side, and
// build.rs writes the same numbers as static_asserts on these structs into the header every
// kernel build includes ($OUT_DIR/fattn_generated.cuh), so a field added, moved or retyped on
// one side only fails to compile.
//
// Pointers are already offset to the tensors' start; strides are in elements; the head
// dimension is contiguous (stride 1) for q, k, v and o. Fields a kernel does not read are
// zero (null).
#pragma once

#include <stdint.h>

// Above this `scale_log2` (softmax_scale · log2 e) the prefill scales each score before its
// row max (the `_mods` arithmetic) instead of folding the scale into exp2's FMA. The fold
// subtracts the rounded product max·scale from the exact products, so the row's largest
// probability is 2^δ with |δ| up to half an ulp of the scaled max: at scaled scores of 2^28
// and more that overflows the f16 P tile (2^31: f32) or underflows to a row of zeros
// (lab/results/s41-call6). Below it that needs |q·k| ≥ 2^24. src/limits.rs
// (PRESCALE_ABOVE_LOG2) holds the same number; build.rs asserts it here.
constexpr float kFattnPrescaleAboveLog2 = 16.f;

struct FattnParams {
    // ---- every kernel -------------------------------------------------------------------
    const void* q;
    const void* k;
    const void* v;
    void* o;
    // (batch, heads) f32 slopes, contiguous; null when ALiBi is off.
    const float* alibi_slopes;
    int64_t q_batch_stride, q_seq_stride, q_head_stride;
    int64_t k_batch_stride, k_seq_stride, k_head_stride;
    int64_t v_batch_stride, v_seq_stride, v_head_stride;
    int64_t o_batch_stride, o_seq_stride, o_head_stride;
    int32_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
    // heads / kv_heads: q head h reads kv head h / kv_group.
    int32_t kv_group;
    // Bottom-right windows; -1 = unbounded (causal is right = 0).
    int32_t window_left, window_right;
    // 1 when every q/k/v row start is 16-byte aligned and head_dim % 8 == 0 (cp.async path).
    int32_t vec_in;
    // 1 when every o row start is 16-byte aligned and head_dim % 8 == 0 (16-byte stores).
    int32_t vec_out;
    // softmax_scale · log2(e): scores are kept in log2 units so the softmax uses exp2.
    float scale_log2;
    // softmax_scale / softcap and softcap · log2(e); softcap_log2 == 0 means no softcap.
    float softcap_inv_scaled;
    float softcap_log2;
    // The same in natural units: softmax_scale, and the softcap (0 = off).
    float scale;
    float softcap;

    // (batch, heads, seq_q) f32, natural log: each row's log-sum-exp of its final scores (-inf
    // for a row that sees no key). The forward kernels write it when it is not null; the
    // backward (FattnBwdParams::fwd) reads it.
    float* lse;

    // ---- packed (varlen) batches and paged KV caches; zero/null when dense ---------------------
    // (batch + 1) cumulative sequence lengths of packed (varlen) q and k/v.
    const int32_t* cu_seqlens_q;
    const int32_t* cu_seqlens_k;
    // Paged KV: (batch, pages) page indices, its batch stride, and keys per page.
    const int32_t* block_table;
    int64_t block_table_batch_stride;
    int32_t page_block_size;

    // ---- split-key decode (kernels/decode_sm80.cu) ----------------------------------------
    int32_t num_splits;
    // [num_splits][batch · seq_q · heads][D] f32 partial outputs (D: the instance's head dim)
    // and [num_splits][batch · seq_q · heads][2] their (max in log2 units, sum); null when
    // num_splits == 1.
    float* partial_o;
    float* partial_ml;
    // [batch][kv_heads · row_groups] arrival counters: zero before the launch and after it.
    uint32_t* tile_counters;
    // ceil(kv_group · seq_q / 16): the 16-row groups of one kv head's (q head, query) rows.
    int32_t row_groups;
    // The union of the rows' visible keys, [key_begin, key_end), split into num_splits
    // slices of keys_per_split keys (a multiple of 64).
    int32_t key_begin;
    int32_t key_end;
    int32_t keys_per_split;

    // ---- packed batches: multimodal prefix ranges -----------------------------------------
    // (batch, max_mm_ranges, 2) int32 [start, end) key positions of each sequence (start ==
    // end: none), contiguous; null when there are none.
    const int32_t* mm_ranges;
    int32_t max_mm_ranges;
    int32_t defer_combine;  // decode: a separate launch merges per-block (1) or per-warp (2) partials

    // ---- dense prefill and backward: the grid's tile order -----------------------------------
    // T > 0 (at most the grid's groups: the host's bound): the grid's last T groups' tiles go
    // heaviest first across those groups, so that a grid under a right-bounded mask ends on
    // its lightest tiles; the earlier groups keep their tiles consecutive, heaviest first; 0:
    // every group so. Forward: groups are (batch,
    // head) pairs, tiles their query blocks (kernels/common/grid.cuh `query_block_tail`);
    // backward: (batch, kv head, kv split, column split) groups, tiles their key blocks
    // (kernels/common/bwd_index.cuh `bwd_cta`).
    int32_t tail_groups;
    int32_t pad_fwd_;
};

// The backward's parameters (kernels/bwd_sm80.cu): the forward's, whose fields keep their
// meaning (`o` and its strides are the forward's output, read by the preprocess; `lse` is
// read; `scale` multiplies dQ and dK), and the rest below. src/cuda/params.rs declares it
// with the same offsets, asserted on both sides like FattnParams'.
struct FattnBwdParams {
    FattnParams fwd;
    // dO: (batch, seq_q, heads, head_dim), head dim contiguous, input dtype.
    const void* d_o;
    int64_t do_batch_stride, do_seq_stride, do_head_stride;
    // Workspaces written by the preprocess, (batch, heads, seq_q_pad) f32: D and lse·log2 e.
    float* dsum;
    float* lse_log2;
    // (batch, heads, seq_q_pad, head_dim_inst) f32, zeroed before the main kernel.
    float* dq_accum;
    // (batch, kv_heads, seq_k_pad, head_dim_inst) f32, zeroed; null unless kv_splits > 1.
    float* dk_accum;
    float* dv_accum;
    // (batch, seq_k, kv_heads, head_dim) contiguous outputs in the input dtype (kv_splits == 1).
    void* dk;
    void* dv;
    // seq_q rounded up to a multiple of 128 (every instance's query block divides it).
    int32_t seq_q_pad;
    // Number of key blocks × kBlockN of the instance (rows of dk/dv_accum).
    int32_t seq_k_pad;
    // Row length of the accumulators: the instance's head dim (f32 kernel: head_dim).
    int32_t head_dim_inst;
    // CTAs per kv head along its group, and q heads per such CTA (kv_group / kv_splits).
    int32_t kv_splits;
    int32_t heads_per_split;
    // 1 when every dO row start is 16-byte aligned and head_dim fills whole 16-byte chunks.
    int32_t vec_do;
    // Rows per head of the workspaces: dsum/lse_log2/dq_accum (q rows) and dk/dv_accum (keys).
    // Dense: seq_q_pad and seq_k_pad. Packed: total + 136 · batch, sequence b from row
    // packed_ws_base(cu[b], b) of kernels/bwd_sm80.cu.
    int32_t ws_rows_q;
    int32_t ws_rows_k;
    // Packed: total_q, the row stride of the (heads, total_q) LSE; 0 dense.
    int32_t total_q;
    int32_t pad_bwd_;
};

// The backward's convert kernel: an f32 accumulator (batch, heads, seq_pad, d_inst) × scale →
// a (batch, seq, heads, head_dim) contiguous output in the input dtype.
// Packed (cu_seqlens not null): the output is (total, heads, head_dim), `seq_pad` the
// accumulator's rows per head, sequence b from row packed_ws_base(cu_seqlens[b], b).
struct FattnBwdConvertParams {
    const float* src;
    void* dst;
    int32_t batch, heads, seq, head_dim, seq_pad, d_inst;
    float scale;
    int32_t pad_;
    // (batch + 1) cumulative row counts of a packed output; null dense.
    const int32_t* cu_seqlens;
};

// A CUtensorMap (cuda.h), opaque: 128 bytes, 64-byte aligned, made on the host by
// cuTensorMapEncodeTiled; the Hopper kernels read it from their __grid_constant__ parameter.
struct alignas(64) FattnTmaDesc {
    uint64_t opaque[16];
};

// n / d for 0 <= n < 2^31 and a launch constant d >= 1 without a divide instruction:
// (n · mul) >> (31 + shift), shift = ceil(log2 d), mul = ceil(2^(31 + shift) / d)
// (src/cuda/params.rs `FastDiv` makes them, proves the bound and tests it;
// kernels/common/grid.cuh `fast_divmod` divides).
struct FattnFastDiv {
    uint32_t mul, shift;
};

// The Hopper forward's parameters (kernels/fwd_sm90.cu): 4-D tensor maps (head_dim, seq,
// heads, batch), innermost first, of q, k and v from their real strides (boxes of 64
// columns × the instance's rows or keys, 128-byte swizzle), then the forward's parameters.
struct FattnHopperParams {
    FattnTmaDesc tma_q;
    FattnTmaDesc tma_k;
    FattnTmaDesc tma_v;
    FattnParams fwd;
    // Persistent grids: the counter the blocks draw their next tile from, zero at the launch
    // and left zero by its last draw, or null (a fixed stride); see kernels/fwd_sm90.cu.
    uint32_t* tile_counter;
    // 1: every sequence's query tiles move up by the padding of its last one (shift =
    // tiles · kBlockM - len_q, tile m covers rows [m · kBlockM - shift, (m + 1) · kBlockM -
    // shift)), so that under a causal mask the one partial tile is the top one, which sees
    // the fewest keys, rather than the bottom one, which sees them all (src/cuda/
    // prefill_sm90.rs `partial_tile_top`). Rows above 0 are not stored (dense: TMA's zero
    // fill; packed: the previous sequence's rows). Dense and packed tile alike, so a
    // sequence's rows take the same key blocks either way (the same bits). 0: no shift.
    int32_t partial_tile_top;
    // Strided persistent grids: the last sk_tail tiles are shared out by key blocks (stream-K,
    // kernels/fwd_sm90.cu); 0: none. Their pieces' partials go to sk_partial, [2 · grid][
    // consumers][64 · head_dim + 128] f32, and sk_flags, [grid][consumers] u32 zeroed before
    // the launch (and left zero), count each split tile's pieces in.
    int32_t sk_tail;
    float* sk_partial;
    uint32_t* sk_flags;
    // R > 1: a small grid of R · tiles CTAs launched as clusters of R (2 today), each cluster
    // splitting one tile's key blocks (kernels/fwd_sm90.cu; src/cuda/prefill_sm90.rs
    // `pair_split`); 0: one CTA per tile.
    int32_t pair_split;
    // P > 1: a strided persistent grid's last tiles % grid tiles are each split into P
    // contiguous ranges of key blocks, one per CTA (CTAs 0 .. P · (tiles % grid)); their
    // partials go to sk_partial, [tail tiles · P][consumers][(head_dim / 8 + 1) · 128] float4,
    // and sk_flags, [tail tiles][consumers] u32 zeroed before the launch (and left zero),
    // counts each tile's pieces in (kernels/fwd_sm90.cu kTailSplit; src/cuda/prefill_sm90.rs
    // `tail_pieces`); 0: none.
    int32_t tail_pieces;
    // 1: dense tiles store O with TMA through tma_o (the staged tile, one box of 64 columns ×
    // 64 rows per panel and consumer warpgroup, where the boxes lie wholly inside the output;
    // partial or shifted tiles and padded head dims keep the threads' stores); 0: 16-byte
    // stores by every thread (packed batches always: a box would cross into the next
    // sequence's rows).
    int32_t o_tma;
    // 1: the key block holding a tile's last visible key, when that key leaves a 16-key step
    // of the block empty, runs Q·Kᵀ at 64 keys where those hold it and P·V over its 16-key
    // steps up to it (kernels/fwd_sm90.cu `trim_last`); 0: every block at the full width.
    int32_t trim_last;
    // Dividers by the query blocks of a (batch, head) pair, by the heads and by the tail's
    // pairs (fwd.tail_groups, 1 when 0): an item's (batch, head, query block) without a divide
    // (kernels/common/grid.cuh `query_block_tail_by`).
    FattnFastDiv div_m, div_heads, div_pairs;
    // Strided grids with a split tail (tail_pieces or sk_tail set): the whole rounds of tiles
    // every block runs before the tail (tiles / grid, or (tiles - sk_tail) / grid); else 0.
    int32_t whole_rounds;
    // 1: a strided persistent grid of the d128 instances launched as clusters of two, whose
    // CTAs run tiles 2i and 2i + 1 (one (batch, head): the host sets it only when the query
    // blocks per head and the grid are even) and each load half of every K and V tile into
    // both (TMA multicast; kernels/fwd_sm90.cu kMulticast, src/cuda/prefill_sm90.rs
    // `kv_multicast`); 0: every CTA loads its own.
    int32_t kv_multicast;
    uint32_t pad_hopper_[14];
    // The output's 4-D tensor map (head_dim, seq_q, heads, batch), boxes of 64 columns × 64
    // rows, 128-byte swizzle; unset (zeros) when o_tma is 0.
    FattnTmaDesc tma_o;
};

// The Hopper backward's parameters (kernels/bwd_sm90.cu): 4-D tensor maps (head_dim, seq,
// heads, batch) of q, k, v and dO from their real strides (boxes of 64 columns × the
// instance's query rows for q and dO, its key block for k and v; 128-byte swizzle), then the
// backward's parameters, whose fields keep their meaning.
struct FattnHopperBwdParams {
    FattnTmaDesc tma_q;
    FattnTmaDesc tma_k;
    FattnTmaDesc tma_v;
    FattnTmaDesc tma_do;
    FattnBwdParams bwd;
    uint64_t pad_hopper_bwd_[1];
};
