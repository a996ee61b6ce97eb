//! TMA descriptors (CUtensorMap) of the Hopper kernels' q/k/v/dO tiles, made per call from a
//! tensor's real strides: kernels/fwd_sm90.cu (prefill_sm90.rs) and kernels/bwd_sm90.cu
//! (backward_sm90.rs) load 64-column boxes with the 128-byte swizzle through them.

use candle_core::cuda_backend::cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use candle_core::{bail, Result};

use super::instances::Dtype;
use super::params::TmaDesc;
use super::{DevTensor, KernelDtype};

/// Columns of one TMA box: the 128-byte swizzle's width in 16-bit elements.
const BOX_COLS: u32 = 64;

/// A tensor map of a `(batch, seq, heads, head_dim)` tensor (`seq` rows of `seq_len`, `heads`
/// heads), boxes of 64 columns × `rows`, 128-byte swizzle; `None` when TMA cannot describe it.
pub(super) fn tensor_map<T: KernelDtype>(
    t: &DevTensor<'_>,
    extents: (usize, usize, usize, usize),
    rows: u32,
) -> Result<Option<TmaDesc>> {
    map_at::<T>(t.ptr, [t.strides.seq, t.strides.head, t.strides.batch], extents, rows)
}

/// As [`tensor_map`], for the tensor at device address `ptr` whose rows, heads and batches
/// lie `seq`, `head` and `batch` elements apart (`[seq, head, batch]`).
pub(super) fn map_at<T: KernelDtype>(
    ptr: u64,
    [seq_stride, head_stride, batch_stride]: [usize; 3],
    (batch, seq_len, heads, head_dim): (usize, usize, usize, usize),
    rows: u32,
) -> Result<Option<TmaDesc>> {
    let elem = std::mem::size_of::<T>() as u64;
    if !ptr.is_multiple_of(16) {
        return Ok(None);
    }
    let dims = [head_dim as u64, seq_len as u64, heads as u64, batch as u64];
    let mut strides = [seq_stride as u64 * elem, head_stride as u64 * elem, batch_stride as u64 * elem];
    for (i, s) in strides.iter_mut().enumerate() {
        // A dimension of extent 1 is never stepped: any valid stride describes it.
        if dims[i + 1] == 1 && (*s == 0 || !s.is_multiple_of(16)) {
            *s = 16;
        }
        if !s.is_multiple_of(16) || *s >= 1 << 40 {
            return Ok(None);
        }
    }
    if dims.iter().any(|&d| d == 0 || d > u32::MAX as u64) {
        return Ok(None);
    }
    let data_type = match T::DTYPE {
        Dtype::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        Dtype::BF16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Dtype::F32 => return Ok(None),
    };
    let boxes = [BOX_COLS, rows, 1, 1];
    let element_strides = [1u32; 4];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer argument points at a live local array of the length the rank (4)
    // implies (dims and boxes: 4, strides: 3); `map` is a writable CUtensorMap. The global
    // address is only recorded in the map, not dereferenced here; it is the start of a live
    // device allocation that the launch reads (the output's map: writes) within dims × strides
    // (checked by validation; the output is allocated for exactly these dims).
    let res = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            4,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if res != sys::CUresult::CUDA_SUCCESS {
        bail!(
            "fused-attn cuda: cuTensorMapEncodeTiled failed with {res:?} (dims {dims:?}, byte strides {strides:?}, \
             box {boxes:?}, address {ptr:#x})"
        )
    }
    Ok(Some(TmaDesc(map.opaque)))
}
