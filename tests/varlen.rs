//! Packed (varlen) and paged calls on the CPU: random sweeps against the f64 oracle in every
//! dtype, gradients of packed batches, the log-sum-exp, and every validation error (also
//! `attention_varlen_into`'s).
//! The GPU binary (`tests/gpu.rs`) runs the same sweeps on CUDA.

mod common;

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_fused_attn::{
    attention_ref_varlen_lse, attention_varlen, attention_varlen_into, attention_varlen_with_lse, AttnParams, Varlen,
};
use common::varlen::{run_varlen_grad_sweep, run_varlen_sweep, VarlenCase, VarlenLimits};
use common::{case_seed, to_f64_vec};

fn sweep(dtype: DType, n: usize, seed: u64) {
    let st = run_varlen_sweep(&Device::Cpu, dtype, n, seed, &VarlenLimits::cpu()).unwrap();
    assert_eq!(st.failures, 0, "{} of {} varlen cases failed (see FAIL lines above)", st.failures, st.cases);
}

#[test]
fn varlen_sweep_f32() {
    sweep(DType::F32, 200, 0x7a11);
}

#[test]
fn varlen_sweep_f16() {
    sweep(DType::F16, 150, 0x7a12);
}

#[test]
fn varlen_sweep_bf16() {
    sweep(DType::BF16, 150, 0x7a13);
}

/// The drawn cases cover what the issue lists: empty, single and odd lengths, decode rows
/// beside prefill rows in one batch, pages of 16, 32 and 256 (and odd sizes), prefix ranges
/// touching both ends, head dims above 256, i32 and u32 indices on both devices.
#[test]
fn varlen_sweep_covers_the_edge_cases() {
    let limits = VarlenLimits::cpu();
    let cases: Vec<VarlenCase> = (0..200).map(|i| VarlenCase::random(case_seed(0x7a11, i), &limits)).collect();
    let any = |f: &dyn Fn(&VarlenCase) -> bool| cases.iter().any(f);
    assert!(any(&|c| c.lens_q.contains(&0) || c.lens_k.contains(&0)), "a sequence of length 0");
    assert!(any(&|c| c.lens_q.contains(&1)), "a decode row");
    assert!(any(&|c| c.lens_q.iter().any(|l| l % 2 == 1 && *l > 1)), "an odd length");
    assert!(
        any(&|c| c.lens_q.iter().zip(&c.lens_k).any(|(q, k)| *q <= 16 && *k > 64)
            && c.lens_q.iter().zip(&c.lens_k).any(|(q, k)| *q > 16 && q == k)),
        "mixed decode and prefill"
    );
    for ps in [16, 32, 256, 7] {
        assert!(any(&|c| c.paging.as_ref().is_some_and(|p| p.page_size == ps)), "pages of {ps}");
    }
    let needed = |c: &VarlenCase, ps: usize| c.lens_k.iter().map(|l| l.div_ceil(ps)).sum::<usize>();
    assert!(
        any(&|c| c.paging.as_ref().is_some_and(|p| p.num_blocks > needed(c, p.page_size))),
        "a pool larger than needed"
    );
    assert!(any(&|c| c.paging.as_ref().is_some_and(|p| p.rank3)), "a rank-3 paged cache");
    let ranges_of = |c: &VarlenCase| -> Vec<([i32; 2], usize)> {
        match &c.ranges {
            None => vec![],
            Some((mr, r)) => r.iter().enumerate().map(|(i, &x)| (x, c.lens_k[i / mr])).collect(),
        }
    };
    assert!(any(&|c| ranges_of(c).iter().any(|&([s, e], _)| s == 0 && e > 0)), "a range at the start");
    assert!(
        any(&|c| ranges_of(c).iter().any(|&([s, e], lk)| s > 0 && s < e && e as usize == lk)),
        "a range at the end"
    );
    assert!(any(&|c| c.head_dim == 512) && any(&|c| c.head_dim > 256 && c.head_dim < 512));
    assert!(any(&|c| c.i32_indices) && any(&|c| !c.i32_indices));
    assert!(any(&|c| c.strided.iter().any(|&s| s)));
}

/// `attention_varlen_with_lse` against the f64 oracle's per-row log-sum-exp.
#[test]
fn varlen_lse_matches_the_oracle() -> Result<()> {
    let limits = VarlenLimits::cpu();
    for i in 0..40 {
        let case = VarlenCase::random(case_seed(0x15e, i), &limits);
        let (q, k, v, vl, p) = case.inputs(&Device::Cpu, DType::F32)?;
        let (out, lse) = attention_varlen_with_lse(&q, &k, &v, &vl, &p)?;
        assert_eq!(lse.dims(), &[case.heads, q.dim(0)?]);
        let out2 = attention_varlen(&q, &k, &v, &vl, &p)?;
        assert_eq!(to_f64_vec(&out)?, to_f64_vec(&out2)?, "the LSE changes the output");
        let up = |t: &Tensor| t.to_dtype(DType::F64);
        let want = attention_ref_varlen_lse(&up(&q)?, &up(&k)?, &up(&v)?, &vl, &p)?;
        for (g, w) in to_f64_vec(&lse)?.iter().zip(to_f64_vec(&want)?) {
            if w.is_infinite() {
                assert_eq!(*g, w, "case {case:?}");
            } else {
                assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "lse {g} vs {w}, case {case:?}");
            }
        }
    }
    Ok(())
}

#[test]
fn varlen_grad_sweep_f32() -> Result<()> {
    assert_eq!(run_varlen_grad_sweep(&Device::Cpu, DType::F32, 60, 0x6a1)?, 0);
    Ok(())
}

#[test]
fn varlen_grad_sweep_bf16() -> Result<()> {
    assert_eq!(run_varlen_grad_sweep(&Device::Cpu, DType::BF16, 40, 0x6a2)?, 0);
    Ok(())
}

fn err_of(r: Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.dims()),
        Err(e) => e.to_string(),
    }
}

/// Every validation the issue lists returns an error that names the values.
#[test]
fn varlen_validation_errors_name_the_values() -> Result<()> {
    let dev = Device::Cpu;
    let q = Tensor::zeros((7, 4, 16), DType::F32, &dev)?;
    let kv = Tensor::zeros((9, 2, 16), DType::F32, &dev)?;
    let cu = |v: &[u32]| Tensor::new(v, &dev).unwrap();
    let p = AttnParams::new(0.25);
    let run = |vl: &Varlen, k: &Tensor| err_of(attention_varlen(&q, k, k, vl, &p));
    let cases: Vec<(String, &str)> = vec![
        (run(&Varlen::new(&cu(&[0, 5, 3, 7]), &cu(&[0, 3, 6, 9]), 5, 3), &kv), "non-decreasing"),
        (run(&Varlen::new(&cu(&[0, 3, 6]), &cu(&[0, 3, 9]), 6, 6), &kv), "total_q (7)"),
        (run(&Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 3, 8]), 4, 5), &kv), "total_k (9)"),
        (run(&Varlen::new(&cu(&[1, 3, 7]), &cu(&[0, 3, 9]), 4, 6), &kv), "must start at 0, got 1"),
        (
            run(&Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 3, 9]), 3, 6), &kv),
            "max_seqlen_q = 3 is smaller than sequence 1's length 4",
        ),
        (
            run(&Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 3, 9]), 4, 5), &kv),
            "max_seqlen_k = 5 is smaller than sequence 1's length 6",
        ),
        (run(&Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 9]), 4, 9), &kv), "same length"),
        (
            run(&Varlen::new(&Tensor::new(&[0f32, 3., 7.], &dev)?, &cu(&[0, 3, 9]), 4, 6), &kv),
            "seqlens_q must be u32 or i32, got F32",
        ),
        (
            run(&Varlen::new(&cu(&[0, 3, 7]), &Tensor::new(&[[0u32, 3, 9]], &dev)?, 4, 6), &kv),
            "seqlens_k must have rank 1",
        ),
    ];
    // Paged: 3 blocks of 4 keys.
    let cache = Tensor::zeros((3, 4, 2, 16), DType::F32, &dev)?;
    let cu_k = cu(&[0, 5, 7]);
    let cu_q = cu(&[0, 3, 7]);
    let paged = |table: &Tensor, ps: usize, k: &Tensor| run(&Varlen::new(&cu_q, &cu_k, 4, 5).paged(table, ps), k);
    let ok_table = Tensor::new(&[[2u32, 0], [1, 99]], &dev)?;
    let mut more: Vec<(String, &str)> = vec![
        (
            paged(&Tensor::new(&[[2u32, 3], [1, 0]], &dev)?, 4, &cache),
            "block_table[0, 1] = 3 is outside the paged cache's 3 blocks",
        ),
        (paged(&Tensor::new(&[[2i32, 0], [-1, 0]], &dev)?, 4, &cache), "block_table[1, 0] = -1"),
        (paged(&ok_table, 8, &cache), "page_block_size 8 does not match"),
        (
            paged(&ok_table, 5, &Tensor::zeros((12, 2, 16), DType::F32, &dev)?),
            "page_block_size 5 does not divide the 12 rows",
        ),
        (paged(&Tensor::new(&[[2u32], [1]], &dev)?, 4, &cache), "2 blocks of 4, but the block_table has 1 columns"),
        (paged(&Tensor::new(&[[2u32, 0]], &dev)?, 4, &cache), "block_table has 1 rows but the batch has 2"),
        (paged(&Tensor::new(&[[2f32, 0.], [1., 0.]], &dev)?, 4, &cache), "block_table must be u32 or i32"),
    ];
    let ranges = |r: &[[i32; 2]]| {
        let flat: Vec<i32> = r.iter().flatten().copied().collect();
        Tensor::from_vec(flat, (2, r.len() / 2, 2), &dev).unwrap()
    };
    let vl = |r: Tensor| Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 3, 9]), 4, 6).mm_prefix_ranges(&r);
    more.push((run(&vl(ranges(&[[0, 2], [3, 1]])), &kv), "mm_prefix_ranges[1, 0] = [3, 1) starts after it ends"));
    more.push((
        run(&vl(ranges(&[[0, 4], [0, 1]])), &kv),
        "mm_prefix_ranges[0, 0] = [0, 4) lies outside sequence 0's 3 keys",
    ));
    more.push((run(&vl(ranges(&[[-1, 2], [0, 1]])), &kv), "[-1, 2)"));
    more.push((run(&vl(Tensor::new(&[[[0u32, 1]], [[0, 1]]], &dev)?), &kv), "mm_prefix_ranges must be i32"));
    more.push((
        run(&vl(Tensor::zeros((3, 1, 2), DType::I32, &dev)?), &kv),
        "mm_prefix_ranges has 3 rows but the batch has 2",
    ));
    more.push((
        err_of(attention_varlen(&q.unsqueeze(0)?, &kv, &kv, &Varlen::new(&cu(&[0, 7]), &cu(&[0, 9]), 7, 9), &p)),
        "varlen q must have rank 3",
    ));
    more.push((
        err_of(attention_varlen(
            &q,
            &kv.narrow(2, 0, 8)?,
            &kv.narrow(2, 0, 8)?,
            &Varlen::new(&cu(&[0, 7]), &cu(&[0, 9]), 7, 9),
            &p,
        )),
        "head_dim differs between q (16) and k/v (8)",
    ));
    for (msg, want) in cases.into_iter().chain(more) {
        assert!(msg.contains(want), "error {msg:?} should contain {want:?}");
    }
    Ok(())
}

/// A paged call on an input that needs gradients is refused, not silently without them.
#[test]
fn paged_calls_refuse_gradients() -> Result<()> {
    let dev = Device::Cpu;
    let q = Var::from_tensor(&Tensor::zeros((2, 2, 8), DType::F32, &dev)?)?;
    let cache = Tensor::zeros((2, 4, 1, 8), DType::F32, &dev)?;
    let vl = Varlen::new(&Tensor::new(&[0u32, 2], &dev)?, &Tensor::new(&[0u32, 6], &dev)?, 2, 6)
        .paged(&Tensor::new(&[[1u32, 0]], &dev)?, 4);
    let msg = err_of(attention_varlen(q.as_tensor(), &cache, &cache, &vl, &AttnParams::new(0.3)));
    assert!(msg.contains("paged KV cache has no backward"), "{msg}");
    Ok(())
}

/// Every check `attention_varlen_into` makes on its output, and on gradients, returns an
/// error that names the values; so do `attention_varlen`'s own checks through it.
#[test]
fn into_validation_errors_name_the_values() -> Result<()> {
    let dev = Device::Cpu;
    let q = Tensor::zeros((7, 4, 16), DType::F32, &dev)?;
    let kv = Tensor::zeros((9, 2, 16), DType::F32, &dev)?;
    let cu = |v: &[u32]| Tensor::new(v, &dev).unwrap();
    let vl = Varlen::new(&cu(&[0, 3, 7]), &cu(&[0, 3, 9]), 4, 6);
    let p = AttnParams::new(0.25);
    let out = Tensor::zeros((7, 4, 16), DType::F32, &dev)?;
    attention_varlen_into(&out, &q, &kv, &kv, &vl, &p)?; // the valid call
    let err = |r: Result<()>| match r {
        Ok(()) => panic!("expected an error, got Ok"),
        Err(e) => e.to_string(),
    };
    let into = |out: &Tensor, q: &Tensor, k: &Tensor, v: &Tensor| err(attention_varlen_into(out, q, k, v, &vl, &p));
    // out and k as views of one flat buffer, on disjoint elements.
    let flat = Tensor::zeros(7 * 4 * 16 + 9 * 2 * 16, DType::F32, &dev)?;
    let (out_in_flat, k_in_flat) =
        (flat.narrow(0, 0, 448)?.reshape((7, 4, 16))?, flat.narrow(0, 448, 288)?.reshape((9, 2, 16))?);
    let q_var = Var::from_tensor(&q)?;
    let cases: Vec<(String, &str)> = vec![
        (
            into(&Tensor::zeros((7, 4, 8), DType::F32, &dev)?, &q, &kv, &kv),
            "out must have q's shape [7, 4, 16] (total_q, heads, head_dim), got [7, 4, 8]",
        ),
        (into(&Tensor::zeros((7, 4, 16), DType::F16, &dev)?, &q, &kv, &kv), "out must have q's dtype F32, got F16"),
        (
            into(&Tensor::zeros((4, 7, 16), DType::F32, &dev)?.transpose(0, 1)?, &q, &kv, &kv),
            "out must be contiguous (row-major, or a narrow of such a buffer along its first dim), got shape [7, 4, 16] with strides [16, 112, 1]",
        ),
        (into(&q, &q, &kv, &kv), "out shares its storage with q"),
        (into(&out_in_flat, &q, &k_in_flat, &kv), "out shares its storage with k"),
        (into(&out_in_flat, &q, &kv, &k_in_flat), "out shares its storage with v"),
        (into(&out, q_var.as_tensor(), &kv, &kv), "use attention_varlen for training"),
        (into(&out, &q, &kv.narrow(2, 0, 8)?, &kv.narrow(2, 0, 8)?), "head_dim differs between q (16) and k/v (8)"),
        (
            err(attention_varlen_into(&out, &q, &kv, &kv, &Varlen::new(&cu(&[0, 5, 3, 7]), &cu(&[0, 3, 6, 9]), 5, 3), &p)),
            "non-decreasing",
        ),
    ];
    for (msg, want) in cases {
        assert!(msg.contains(want), "error {msg:?} should contain {want:?}");
    }
    Ok(())
}
