// Where the rows of one (batch, head) of q, k, v and o start in memory, for the dense
// (batch, seq, heads, head_dim) layout and for packed (varlen) batches, whose K/V may be a
// paged cache. Row j of a head is at + j · <tensor>_seq_stride elements from its start; the
// head dimension is contiguous.
//
// Packed: sequence b owns q/o rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] of the (total_q,
// heads, head_dim) tensors, whose batch strides the host sets to 0. Unpaged, it owns k/v rows
// cu_seqlens_k[b] .. cu_seqlens_k[b+1]. Paged, key j of sequence b is row j % page of block
// block_table[b · block_table_batch_stride + j / page]; k/v_batch_stride is the block stride
// and k/v_seq_stride the row stride within a block (rank-4 (blocks, page, heads, d) and
// rank-3 (blocks · page, heads, d) caches alike).
#pragma once

#include "params.cuh"

namespace fattn {

template <class T>
__device__ __forceinline__ const T* q_head_rows(const FattnParams& p, int b, int h) {
    return static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
}
template <class T>
__device__ __forceinline__ const T* k_head_rows(const FattnParams& p, int b, int kvh) {
    return static_cast<const T*>(p.k) + b * p.k_batch_stride + kvh * p.k_head_stride;
}
template <class T>
__device__ __forceinline__ const T* v_head_rows(const FattnParams& p, int b, int kvh) {
    return static_cast<const T*>(p.v) + b * p.v_batch_stride + kvh * p.v_head_stride;
}
template <class T>
__device__ __forceinline__ T* o_head_rows(const FattnParams& p, int b, int h) {
    return static_cast<T*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
}

// One sequence of a batch: its first q row and first k/v row in the packed tensors (0 when
// dense, or paged for k), and its lengths.
struct SeqSpan {
    int q0, k0, len_q, len_k;
};
// Sequence b; kPacked says whether the launch is packed (p.cu_seqlens_q != null).
template <bool kPacked>
__device__ __forceinline__ SeqSpan seq_span(const FattnParams& p, int b) {
    if constexpr (!kPacked) {
        return SeqSpan{0, 0, p.seq_q, p.seq_k};
    } else {
        const int q0 = p.cu_seqlens_q[b], k0 = p.cu_seqlens_k[b];
        return SeqSpan{q0, k0, p.cu_seqlens_q[b + 1] - q0, p.cu_seqlens_k[b + 1] - k0};
    }
}

// Packed sequence b's q and o rows of head h; its unpaged k/v rows of kv head kvh.
template <class T>
__device__ __forceinline__ const T* q_seq_rows(const FattnParams& p, const SeqSpan& s, int h) {
    return static_cast<const T*>(p.q) + s.q0 * p.q_seq_stride + h * p.q_head_stride;
}
template <class T>
__device__ __forceinline__ T* o_seq_rows(const FattnParams& p, const SeqSpan& s, int h) {
    return static_cast<T*>(p.o) + s.q0 * p.o_seq_stride + h * p.o_head_stride;
}

// Sequence b's row of the block table (null when the cache is not paged).
__device__ __forceinline__ const int32_t* block_table_row(const FattnParams& p, int b) {
    return p.block_table == nullptr ? nullptr : p.block_table + b * p.block_table_batch_stride;
}

// Key `key` of a packed sequence in k or v (`base` is the tensor's kv-head start: p.k/p.v +
// kvh · head stride): through the block table when `table` is not null, else the sequence's
// row k0 + key.
template <class T>
__device__ __forceinline__ const T* kv_key_row(const FattnParams& p, const T* base, int64_t block_stride,
                                               int64_t seq_stride, const int32_t* table, int k0, int key) {
    if (table == nullptr) return base + static_cast<int64_t>(k0 + key) * seq_stride;
    const int page = key / p.page_block_size;
    return base + static_cast<int64_t>(table[page]) * block_stride +
           static_cast<int64_t>(key - page * p.page_block_size) * seq_stride;
}

// A packed sequence's log-sum-exp slot: p.lse is (heads, total_q) for packed batches.
__device__ __forceinline__ float* lse_slot_packed(const FattnParams& p, const SeqSpan& s, int h, int row) {
    const int total_q = p.cu_seqlens_q[p.batch];
    return p.lse + static_cast<int64_t>(h) * total_q + s.q0 + row;
}

}  // namespace fattn
