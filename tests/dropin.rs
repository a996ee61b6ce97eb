//! Code written against candle-flash-attn 0.11.1 compiles against this crate after only the
//! `use` line changes: the crate is renamed to `candle_flash_attn` here, and every public
//! function is bound to a function pointer of candle-flash-attn 0.11.1's exact signature
//! (argument order and types), then called; `FlashAttn` is built with its five public
//! fields and applied with `apply_op3`, as candle-flash-attn's users do.

use candle_core::{DType, Device, Result, Tensor, Var};
// The one line that changes: `use candle_flash_attn;` becomes
use candle_fused_attn as candle_flash_attn;

type Dense = fn(&Tensor, &Tensor, &Tensor, f32, bool) -> Result<Tensor>;
type Windowed = fn(&Tensor, &Tensor, &Tensor, f32, Option<usize>, Option<usize>) -> Result<Tensor>;
type Alibi = fn(&Tensor, &Tensor, &Tensor, &Tensor, f32, bool) -> Result<Tensor>;
type AlibiWindowed = fn(&Tensor, &Tensor, &Tensor, &Tensor, f32, Option<usize>, Option<usize>) -> Result<Tensor>;
type AlibiWindowedSoftcap =
    fn(&Tensor, &Tensor, &Tensor, Option<&Tensor>, f32, Option<usize>, Option<usize>, f32) -> Result<Tensor>;
type Varlen = fn(&Tensor, &Tensor, &Tensor, &Tensor, &Tensor, usize, usize, f32, bool) -> Result<Tensor>;
type VarlenWindowed =
    fn(&Tensor, &Tensor, &Tensor, &Tensor, &Tensor, usize, usize, f32, Option<usize>, Option<usize>) -> Result<Tensor>;
type VarlenPagedWindowed = fn(
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    Option<&Tensor>,
    usize,
    usize,
    f32,
    Option<usize>,
    Option<usize>,
    usize,
    Option<f32>,
) -> Result<Tensor>;
type VarlenAlibi = fn(&Tensor, &Tensor, &Tensor, &Tensor, &Tensor, &Tensor, usize, usize, f32, bool) -> Result<Tensor>;
type VarlenAlibiWindowed = fn(
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    &Tensor,
    usize,
    usize,
    f32,
    Option<usize>,
    Option<usize>,
) -> Result<Tensor>;
type VarlenAlibiWindowedSoftcap = fn(
    &Tensor,
    &Tensor,
    &Tensor,
    Option<&Tensor>,
    &Tensor,
    &Tensor,
    usize,
    usize,
    f32,
    Option<usize>,
    Option<usize>,
    f32,
) -> Result<Tensor>;

#[test]
fn every_function_has_candle_flash_attn_0_11_1_signature_and_runs() -> Result<()> {
    let dense: Dense = candle_flash_attn::flash_attn;
    let windowed: Windowed = candle_flash_attn::flash_attn_windowed;
    let alibi: Alibi = candle_flash_attn::flash_attn_alibi;
    let alibi_windowed: AlibiWindowed = candle_flash_attn::flash_attn_alibi_windowed;
    let alibi_windowed_softcap: AlibiWindowedSoftcap = candle_flash_attn::flash_attn_alibi_windowed_softcap;
    let varlen: Varlen = candle_flash_attn::flash_attn_varlen;
    let varlen_windowed: VarlenWindowed = candle_flash_attn::flash_attn_varlen_windowed;
    let varlen_paged: VarlenPagedWindowed = candle_flash_attn::flash_attn_varlen_paged_windowed;
    let varlen_alibi: VarlenAlibi = candle_flash_attn::flash_attn_varlen_alibi;
    let varlen_alibi_windowed: VarlenAlibiWindowed = candle_flash_attn::flash_attn_varlen_alibi_windowed;
    let varlen_alibi_windowed_softcap: VarlenAlibiWindowedSoftcap =
        candle_flash_attn::flash_attn_varlen_alibi_windowed_softcap;

    let dev = Device::Cpu;
    let q = Tensor::randn(0f32, 1., (2, 5, 4, 32), &dev)?;
    let kv = Tensor::randn(0f32, 1., (2, 7, 2, 32), &dev)?;
    let slopes = Tensor::new(&[0.5f32, 0.25, 0.125, 0.0625], &dev)?;
    let s = 0.17;
    let outs = [
        dense(&q, &kv, &kv, s, true)?,
        windowed(&q, &kv, &kv, s, Some(2), Some(0))?,
        alibi(&q, &kv, &kv, &slopes, s, false)?,
        alibi_windowed(&q, &kv, &kv, &slopes, s, None, Some(0))?,
        alibi_windowed_softcap(&q, &kv, &kv, Some(&slopes), s, None, None, 20.0)?,
    ];
    for o in &outs {
        assert_eq!(o.dims(), q.dims());
    }
    // The same two sequences packed.
    let (qp, kp) = (q.flatten(0, 1)?, kv.flatten(0, 1)?);
    let (cq, ck) = (Tensor::new(&[0u32, 5, 10], &dev)?, Tensor::new(&[0u32, 7, 14], &dev)?);
    let packed = [
        varlen(&qp, &kp, &kp, &cq, &ck, 5, 7, s, true)?,
        varlen_windowed(&qp, &kp, &kp, &cq, &ck, 5, 7, s, Some(2), Some(0))?,
        varlen_alibi(&qp, &kp, &kp, &slopes, &cq, &ck, 5, 7, s, false)?,
        varlen_alibi_windowed(&qp, &kp, &kp, &slopes, &cq, &ck, 5, 7, s, None, Some(0))?,
        varlen_alibi_windowed_softcap(&qp, &kp, &kp, Some(&slopes), &cq, &ck, 5, 7, s, None, None, 20.0)?,
    ];
    // Each packed call equals its dense twin, bit for bit on the CPU.
    for (d, p) in outs.iter().zip(&packed) {
        assert_eq!(d.flatten(0, 1)?.flatten_all()?.to_vec1::<f32>()?, p.flatten_all()?.to_vec1::<f32>()?);
    }
    // The paged form: both sequences' 7 keys in blocks of 4, shuffled into a pool of 5.
    let mut pool = Tensor::zeros((5, 4, 2, 32), DType::F32, &dev)?;
    let table = [[3u32, 0], [4, 1]];
    for (b, blocks) in table.iter().enumerate() {
        for (j, &blk) in blocks.iter().enumerate() {
            let n = 4.min(7 - 4 * j);
            let rows = kv.get(b)?.narrow(0, 4 * j, n)?.unsqueeze(0)?;
            let rows = if n < 4 { rows.pad_with_zeros(1, 0, 4 - n)? } else { rows };
            pool = pool.slice_assign(&[blk as usize..blk as usize + 1, 0..4, 0..2, 0..32], &rows)?;
        }
    }
    let table = Tensor::new(&table, &dev)?;
    let paged = varlen_paged(&qp, &pool, &pool, &cq, &ck, &table, None, 5, 7, s, None, Some(0), 4, None)?;
    assert_eq!(outs[0].flatten(0, 1)?.flatten_all()?.to_vec1::<f32>()?, paged.flatten_all()?.to_vec1::<f32>()?);
    Ok(())
}

#[test]
fn flash_attn_struct_is_applied_with_apply_op3_and_trains() -> Result<()> {
    let dev = Device::Cpu;
    let q = Var::from_tensor(&Tensor::randn(0f32, 1., (1, 6, 4, 16), &dev)?)?;
    let kv = Var::from_tensor(&Tensor::randn(0f32, 1., (1, 6, 2, 16), &dev)?)?;
    let op = candle_flash_attn::FlashAttn {
        softmax_scale: 0.25,
        alibi_slopes: None,
        window_size_left: None,
        window_size_right: Some(0),
        softcap: Some(30.0),
    };
    let out = q.as_tensor().apply_op3(kv.as_tensor(), kv.as_tensor(), op)?;
    let want = candle_flash_attn::flash_attn_alibi_windowed_softcap(
        q.as_tensor(),
        kv.as_tensor(),
        kv.as_tensor(),
        None,
        0.25,
        None,
        Some(0),
        30.0,
    )?;
    assert_eq!(out.flatten_all()?.to_vec1::<f32>()?, want.flatten_all()?.to_vec1::<f32>()?);
    // Gradients flow through the struct too, and equal the functions'.
    let g1 = out.sum_all()?.backward()?;
    let g2 = want.sum_all()?.backward()?;
    for v in [&q, &kv] {
        let (a, b) = (g1.get(v.as_tensor()).expect("a gradient"), g2.get(v.as_tensor()).expect("a gradient"));
        let d = (a - b)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(d < 1e-5, "{d}");
    }
    Ok(())
}
