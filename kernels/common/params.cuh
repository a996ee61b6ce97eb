// The parameter structs that cross the FFI boundary (mirrored in src/cuda/).
#pragma once

#include <stdint.h>

// Pointers are already offset to the tensors' start; strides are in elements. The head
// dimension is contiguous (stride 1) for q, k, v and o.
struct FattnParams {
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
};
// The Rust mirror asserts the same size.
static_assert(sizeof(FattnParams) == 192, "FattnParams layout changed: update src/cuda/mod.rs");

// Mirrored by `DecodeParams` in src/cuda/decode.rs (its size is checked there).
struct DecodeParams {
    const void* q;  // element pointers, start offsets already applied
    const void* k;
    const void* v;
    void* out;
    float* partial_o;   // [num_splits][rows_total][D] (D: the instance), null when num_splits == 1
    float* partial_ml;  // [num_splits][rows_total][2] = (max in log2 units, sum)
    unsigned int* tile_counters;  // [batch][kv_heads · row_groups], zero before the launch and after it
    const float* alibi; // (batch, heads) contiguous, null when off
    long long q_stride_b, q_stride_s, q_stride_h;  // in elements
    long long k_stride_b, k_stride_s, k_stride_h;
    long long v_stride_b, v_stride_s, v_stride_h;
    long long o_stride_b, o_stride_s, o_stride_h;
    int batch, seq_q, seq_k, heads, kv_heads, head_dim;
    int group;            // heads / kv_heads
    int row_groups;       // ceil(group * seq_q / 16)
    int key_begin;        // union of the rows' visible keys: [key_begin, key_end)
    int key_end;
    int keys_per_split;   // a multiple of 64 (4 warps × 16 keys)
    int num_splits;
    int window_left;      // -1 = unbounded
    int window_right;
    float scale;
    float softcap;        // 0 = off
    int aligned;          // 1: every q/k/v row start is 16-byte aligned and head_dim % 8 == 0
    int pad_;
};
static_assert(sizeof(DecodeParams) == 232, "DecodeParams layout changed: update src/cuda/decode.rs");
