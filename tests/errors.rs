//! Bad input returns a candle `Error` that names the problem and the values, never a panic.
//! One test per kind of bad input; each asserts on the message.

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention, attention_ref, flash_attn, flash_attn_alibi, flash_attn_windowed, AttnParams};

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
