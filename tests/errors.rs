//! Bad input returns a candle `Error` that names the problem and the values, never a panic.
//! One test per kind of bad input; each asserts on the message.

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{
    attention, attention_ref, attention_ref_probs, attention_with_lse, flash_attn, flash_attn_alibi,
    flash_attn_windowed, AttnParams, FlashAttn,
};

fn t(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32, &Device::Cpu).expect("zeros")
}

/// Runs the fused op and the reference (which shares the validation) and returns the fused
/// op's message, checking that both reject the input with `needles` in the message.
fn expect_error(q: &Tensor, k: &Tensor, v: &Tensor, p: &AttnParams, needles: &[&str]) {
    for (name, res) in [("attention", attention(q, k, v, p)), ("attention_ref", attention_ref(q, k, v, p))] {
        let msg = match res {
            Ok(out) => panic!("{name} accepted bad input and returned shape {:?}", out.dims()),
            Err(e) => e.to_string(),
        };
        for needle in needles {
            assert!(msg.contains(needle), "{name}: message {msg:?} lacks {needle:?}");
        }
    }
}

#[test]
fn wrong_rank() {
    let p = AttnParams::new(1.0);
    expect_error(
        &t(&[1, 4, 2]),
        &t(&[1, 4, 2, 8]),
        &t(&[1, 4, 2, 8]),
        &p,
        &["q must have rank 4", "got rank 3", "[1, 4, 2]"],
    );
    expect_error(&t(&[1, 4, 2, 8]), &t(&[1, 1, 4, 2, 8]), &t(&[1, 4, 2, 8]), &p, &["k must have rank 4", "got rank 5"]);
    expect_error(&t(&[1, 4, 2, 8]), &t(&[1, 4, 2, 8]), &t(&[32]), &p, &["v must have rank 4", "got rank 1"]);
}

#[test]
fn head_dim_mismatch() {
    let p = AttnParams::new(1.0);
    expect_error(
        &t(&[1, 4, 2, 64]),
        &t(&[1, 4, 2, 32]),
        &t(&[1, 4, 2, 32]),
        &p,
        &["head_dim differs", "q (64)", "k (32)", "v (32)"],
    );
    expect_error(&t(&[1, 4, 2, 64]), &t(&[1, 4, 2, 64]), &t(&[1, 4, 2, 80]), &p, &["head_dim differs", "v (80)"]);
}

#[test]
fn batch_mismatch() {
    expect_error(
        &t(&[2, 4, 2, 8]),
        &t(&[3, 4, 2, 8]),
        &t(&[3, 4, 2, 8]),
        &AttnParams::new(1.0),
        &["batch differs", "q (2)", "k (3)"],
    );
}

#[test]
fn kv_heads_do_not_divide_q_heads() {
    expect_error(
        &t(&[1, 4, 8, 16]),
        &t(&[1, 4, 3, 16]),
        &t(&[1, 4, 3, 16]),
        &AttnParams::new(1.0),
        &["kv heads (3) must divide q heads (8)"],
    );
}

#[test]
fn k_and_v_head_counts_differ() {
    expect_error(
        &t(&[1, 4, 8, 16]),
        &t(&[1, 4, 4, 16]),
        &t(&[1, 4, 2, 16]),
        &AttnParams::new(1.0),
        &["head counts differ", "k has 4", "v has 2"],
    );
}

#[test]
fn k_and_v_sequence_lengths_differ() {
    expect_error(
        &t(&[1, 4, 2, 16]),
        &t(&[1, 10, 2, 16]),
        &t(&[1, 11, 2, 16]),
        &AttnParams::new(1.0),
        &["sequence lengths differ", "k has 10", "v has 11"],
    );
}

#[test]
fn dtype_mix() -> Result<()> {
    let q = t(&[1, 4, 2, 16]);
    let k16 = q.to_dtype(DType::F16)?;
    let kb16 = q.to_dtype(DType::BF16)?;
    expect_error(&q, &k16, &q, &AttnParams::new(1.0), &["dtypes differ", "q is F32", "k is F16", "v is F32"]);
    expect_error(&k16, &k16, &kb16, &AttnParams::new(1.0), &["dtypes differ", "v is BF16"]);
    Ok(())
}

/// A CUDA device when the crate is built with `cuda` and a GPU is present.
#[cfg(feature = "cuda")]
fn second_device() -> Option<Device> {
    Device::new_cuda(0).ok()
}

#[cfg(not(feature = "cuda"))]
fn second_device() -> Option<Device> {
    None
}

/// A device mix needs a second device. Without the `cuda` feature (or without a GPU) the
/// only device this crate can build is the CPU, so the check runs only where CUDA is.
#[test]
fn device_mix() -> Result<()> {
    let Some(gpu) = second_device() else {
        eprintln!("device_mix: no second device (built without `cuda` or no GPU); nothing to mix");
        return Ok(());
    };
    let q = t(&[1, 4, 2, 16]);
    let k = q.to_device(&gpu)?;
    expect_error(&q, &k, &q, &AttnParams::new(1.0), &["must be on one device", "q is on Cpu", "k on Cuda"]);
    let slopes = Tensor::new(&[0.5f32, 0.25], &gpu)?;
    expect_error(&q, &q, &q, &AttnParams::new(1.0).alibi_slopes(&slopes), &["alibi_slopes on Cuda", "q is on Cpu"]);
    Ok(())
}

/// Zero-sized dims whose result is ill defined are errors: k/v with no heads cannot serve
/// q heads. (Well-defined zero sizes, e.g. batch 0 or sk 0, are tested in tests/cpu.rs.)
#[test]
fn zero_kv_heads_for_nonzero_q_heads() {
    expect_error(
        &t(&[1, 4, 2, 16]),
        &t(&[1, 4, 0, 16]),
        &t(&[1, 4, 0, 16]),
        &AttnParams::new(1.0),
        &["k/v have 0 heads but q has 2"],
    );
}

#[test]
fn head_dim_above_maximum() {
    let (q, kv) = (t(&[1, 2, 1, 513]), t(&[1, 2, 1, 513]));
    expect_error(&q, &kv, &kv, &AttnParams::new(1.0), &["head_dim 513 is above the supported maximum 512"]);
    // 512 itself is supported.
    let (q, kv) = (t(&[1, 2, 1, 512]), t(&[1, 2, 1, 512]));
    assert!(attention(&q, &kv, &kv, &AttnParams::new(1.0)).is_ok());
}

#[test]
fn alibi_slopes_of_wrong_shape() -> Result<()> {
    let (q, kv) = (t(&[2, 4, 8, 16]), t(&[2, 4, 2, 16]));
    for bad in [vec![4], vec![8, 2], vec![3, 8], vec![1, 2, 8]] {
        let slopes = Tensor::zeros(bad.as_slice(), DType::F32, &Device::Cpu)?;
        expect_error(
            &q,
            &kv,
            &kv,
            &AttnParams::new(1.0).alibi_slopes(&slopes),
            &["alibi_slopes must have shape (8) or (2, 8)", &format!("got {bad:?}")],
        );
    }
    let slopes = Tensor::zeros(4, DType::F32, &Device::Cpu)?;
    let err = flash_attn_alibi(&q, &kv, &kv, &slopes, 1.0, true).unwrap_err().to_string();
    assert!(err.contains("alibi_slopes must have shape"), "{err}");
    Ok(())
}

#[test]
fn alibi_slopes_of_wrong_dtype() -> Result<()> {
    let (q, kv) = (t(&[1, 4, 2, 16]), t(&[1, 4, 2, 16]));
    for dtype in [DType::F16, DType::F64, DType::U32] {
        let slopes = Tensor::zeros(2, dtype, &Device::Cpu)?;
        expect_error(
            &q,
            &kv,
            &kv,
            &AttnParams::new(1.0).alibi_slopes(&slopes),
            &["alibi_slopes must be f32", &format!("got {dtype:?}")],
        );
    }
    Ok(())
}

#[test]
fn window_that_makes_no_sense() {
    let (q, kv) = (t(&[1, 4, 2, 16]), t(&[1, 4, 2, 16]));
    // Causal means window_size_right = Some(0); a wider right window contradicts it.
    expect_error(
        &q,
        &kv,
        &kv,
        &AttnParams::new(1.0).causal(true).window(None, Some(3)),
        &["causal=true contradicts window_size_right = Some(3)"],
    );
    // Windows beyond the kernels' i32 range.
    let huge = i32::MAX as usize + 1;
    expect_error(
        &q,
        &kv,
        &kv,
        &AttnParams::new(1.0).window(Some(huge), None),
        &["window_size_left = 2147483648", "larger than the supported maximum"],
    );
    let err = flash_attn_windowed(&q, &kv, &kv, 1.0, None, Some(huge)).unwrap_err().to_string();
    assert!(err.contains("window_size_right = 2147483648"), "{err}");
    // causal with Some(0) on the right is the same mask and is fine.
    assert!(attention(&q, &kv, &kv, &AttnParams::new(1.0).causal(true).window(Some(2), Some(0))).is_ok());
}

#[test]
fn bad_scale_or_softcap() {
    let (q, kv) = (t(&[1, 4, 2, 16]), t(&[1, 4, 2, 16]));
    expect_error(&q, &kv, &kv, &AttnParams::new(f32::NAN), &["softmax_scale must be finite", "NaN"]);
    expect_error(&q, &kv, &kv, &AttnParams::new(f32::INFINITY), &["softmax_scale must be finite", "inf"]);
    for c in [-1.0, f32::NAN, f32::INFINITY] {
        expect_error(
            &q,
            &kv,
            &kv,
            &AttnParams::new(1.0).softcap(c),
            &["softcap must be a finite value > 0", &format!("got {c}")],
        );
    }
}

/// The fused op supports f32, f16 and bf16; the reference also takes f64 (it is the oracle).
#[test]
fn unsupported_dtype() -> Result<()> {
    for dtype in [DType::F64, DType::U8, DType::U32, DType::I64] {
        let q = t(&[1, 4, 2, 16]).to_dtype(dtype)?;
        let msg = attention(&q, &q, &q, &AttnParams::new(1.0)).unwrap_err().to_string();
        assert!(
            msg.contains(&format!("unsupported dtype {dtype:?}")) && msg.contains("f32, f16, bf16"),
            "{dtype:?}: {msg}"
        );
        let msg = flash_attn(&q, &q, &q, 1.0, false).unwrap_err().to_string();
        assert!(msg.contains("unsupported dtype"), "{dtype:?}: {msg}");
    }
    assert!(attention_ref(
        &t(&[1, 4, 2, 16]).to_dtype(DType::F64)?,
        &t(&[1, 4, 2, 16]).to_dtype(DType::F64)?,
        &t(&[1, 4, 2, 16]).to_dtype(DType::F64)?,
        &AttnParams::new(1.0)
    )
    .is_ok());
    Ok(())
}

/// The kernels fold the constants into f32 factors: scale·log2(e) without a softcap, scale / c
/// and c·log2(e) with one. Where one of them leaves f32's range every score came out NaN
/// (session 40's panic hunt); each is now an error naming the values.
#[test]
fn scale_or_softcap_outside_f32_range() {
    let (q, kv) = (t(&[1, 4, 2, 16]), t(&[1, 4, 2, 16]));
    expect_error(&q, &kv, &kv, &AttnParams::new(3e38), &["softmax_scale 3e38 is outside f32's range"]);
    expect_error(&q, &kv, &kv, &AttnParams::new(-3e38), &["softmax_scale -3e38 is outside f32's range"]);
    // A subnormal softcap, a ratio scale / c that overflows, and c·log2(e) that overflows.
    for (scale, c) in [(0.25, 1e-39), (1e30, 1e-30), (0.25, f32::MAX)] {
        expect_error(
            &q,
            &kv,
            &kv,
            &AttnParams::new(scale).softcap(c),
            &[&format!("softcap {c:e} with softmax_scale {scale:e} is outside f32's range")],
        );
    }
    // The largest accepted values run, and where the scores stay in f32 (q = 0: every score
    // is 0, so each output row is the mean of v's rows, 1) give the exact answer. Scores
    // beyond f32's range are NaN here as in the naive path (README, limitations).
    let (q0, ones) = (t(&[1, 4, 2, 16]), Tensor::ones((1, 4, 2, 16), DType::F32, &Device::Cpu).expect("ones"));
    let boundary = [
        AttnParams::new(2.3e38),
        AttnParams::new(1.0).softcap(2.3e38),
        AttnParams::new(1e-3).softcap(f32::MIN_POSITIVE),
    ];
    for p in boundary {
        let out = attention(&q0, &ones, &ones, &p).expect("accepted");
        let vals = out.flatten_all().and_then(|o| o.to_vec1::<f32>()).expect("values");
        assert!(vals.iter().all(|&v| v == 1.0), "{p:?}: {vals:?}");
    }
}

/// A broadcast view can claim more elements than `usize` holds (2^64 here, which wraps to 0):
/// an error, where such a view once gave an `Ok` tensor with no storage.
#[test]
fn element_count_overflow() -> Result<()> {
    let one = Tensor::new(&[[[[0.5f32]]]], &Device::Cpu)?;
    let q = one.broadcast_as((1 << 22, 1 << 21, 1 << 21, 1))?;
    expect_error(
        &q,
        &q,
        &q,
        &AttnParams::new(1.0),
        &["q of shape [4194304, 2097152, 2097152, 1]", "more elements than memory can hold"],
    );
    let msg = flash_attn(&q, &q, &q, 1.0, false).unwrap_err().to_string();
    assert!(msg.contains("more elements than memory can hold"), "{msg}");
    Ok(())
}

/// With head_dim 0, q holds no element while its LSE, (batch, heads, seq_q), can be larger
/// than any address space (2^56 f32 here): an error, where the allocation aborted the
/// process.
#[test]
fn lse_larger_than_memory() -> Result<()> {
    let q = Tensor::zeros((1usize << 28, 1, 1usize << 28, 0), DType::F32, &Device::Cpu)?;
    let msg = attention_with_lse(&q, &q, &q, &AttnParams::new(1.0)).unwrap_err().to_string();
    assert!(msg.contains("cannot allocate the LSE") && msg.contains("72057594037927936 elements"), "{msg}");
    Ok(())
}

/// `FlashAttn` through `apply_op3` checks the dtypes of k and v, also when there is no work
/// (it had accepted a u8 or f16 k beside an f32 q on an empty batch).
#[test]
fn flash_attn_op_dtype_mix_on_empty_input() -> Result<()> {
    let op = || FlashAttn {
        softmax_scale: 0.25,
        alibi_slopes: None,
        window_size_left: None,
        window_size_right: None,
        softcap: None,
    };
    let q = t(&[0, 5, 4, 16]);
    let v = t(&[0, 7, 2, 16]);
    for dtype in [DType::F16, DType::U8] {
        let k = v.to_dtype(dtype)?;
        let msg = q.apply_op3(&k, &v, op()).unwrap_err().to_string();
        assert!(msg.contains("dtypes differ") && msg.contains(&format!("k is {dtype:?}")), "{dtype:?}: {msg}");
    }
    Ok(())
}

/// The reference's probabilities of problems with no score: all-zero rows of the right shape,
/// where candle's softmax panicked on the empty rows and the group size divided by zero.
#[test]
fn reference_probs_of_empty_problems() -> Result<()> {
    let p = AttnParams::new(0.25);
    let probs = attention_ref_probs(&t(&[2, 5, 0, 16]), &t(&[2, 7, 0, 16]), &t(&[2, 7, 0, 16]), &p)?;
    assert_eq!(probs.dims(), &[2, 0, 5, 7]);
    let probs = attention_ref_probs(&t(&[2, 5, 4, 16]), &t(&[2, 0, 2, 16]), &t(&[2, 0, 2, 16]), &p)?;
    assert_eq!(probs.dims(), &[2, 4, 5, 0]);
    Ok(())
}

/// The reference takes float dtypes only, and says so (it had passed ints to candle's
/// matmul, whose error does not name the problem).
#[test]
fn reference_refuses_int_dtypes() -> Result<()> {
    for dtype in [DType::U8, DType::U32, DType::I64] {
        let q = t(&[1, 4, 2, 16]).to_dtype(dtype)?;
        let msg = attention_ref(&q, &q, &q, &AttnParams::new(1.0)).unwrap_err().to_string();
        assert!(msg.contains(&format!("unsupported dtype {dtype:?}")), "{dtype:?}: {msg}");
    }
    Ok(())
}
