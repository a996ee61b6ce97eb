// Where the rows of one (batch, head) of q, k, v and o start in memory. Row j of that head is
// at + j · <tensor>_seq_stride elements from there; the head dimension is contiguous.
//
// Only the dense (batch, seq, heads, head_dim) layout exists today. Packed sequences
// (cu_seqlens_q / cu_seqlens_k) and paged KV caches (block_table, page_block_size) in
// params.cuh will change how (batch, row) maps to a memory row, here.
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

}  // namespace fattn
