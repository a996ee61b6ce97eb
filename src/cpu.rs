//! CPU forward. (Interim scalar version: one query row at a time with an online softmax;
//! the tiled, vectorized path replaces it.)

use candle_core::{bail, CpuStorage, Layout, Result, WithDType};
use half::{bf16, f16};
use rayon::prelude::*;

use crate::{Problem, Strides};

pub(crate) fn forward(
    p: &Problem,
    (q, ql): (&CpuStorage, &Layout),
    (k, kl): (&CpuStorage, &Layout),
    (v, vl): (&CpuStorage, &Layout),
    alibi: Option<&[f32]>,
) -> Result<CpuStorage> {
    let (qs, ks, vs) = (Strides::from_layout(ql)?, Strides::from_layout(kl)?, Strides::from_layout(vl)?);
    match (q, k, v) {
        (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => run::<f32>(p, q, qs, k, ks, v, vs, alibi),
        (CpuStorage::F16(q), CpuStorage::F16(k), CpuStorage::F16(v)) => run::<f16>(p, q, qs, k, ks, v, vs, alibi),
        (CpuStorage::BF16(q), CpuStorage::BF16(k), CpuStorage::BF16(v)) => run::<bf16>(p, q, qs, k, ks, v, vs, alibi),
        _ => bail!("fused-attn cpu: q, k and v must share one of f32, f16, bf16"),
    }
}

#[allow(clippy::too_many_arguments)]
fn run<T: WithDType>(
    p: &Problem,
    q: &[T],
    qs: Strides,
    k: &[T],
    ks: Strides,
    v: &[T],
    vs: Strides,
    alibi: Option<&[f32]>,
) -> Result<CpuStorage> {
    let (sq, h, d) = (p.seq_q, p.heads, p.head_dim);
    let mut out = vec![T::zero(); p.batch * sq * h * d];
    out.par_chunks_mut(d).enumerate().for_each(|(row, o)| {
        let (bi, i, hi) = (row / (sq * h), (row / h) % sq, row % h);
        let kh = hi / p.group_size();
        let slope = alibi.map_or(0.0, |a| a[bi * h + hi]);
        let qrow = &q[qs.offset + bi * qs.batch + i * qs.seq + hi * qs.head..][..d];
        let qf: Vec<f32> = qrow.iter().map(|x| x.to_f64() as f32).collect();
        let (lo, hi_k) = p.key_range(i);
        let (mut m, mut l) = (f32::NEG_INFINITY, 0f32);
        let mut acc = vec![0f32; d];
        for j in lo..hi_k {
            let krow = &k[ks.offset + bi * ks.batch + j * ks.seq + kh * ks.head..][..d];
            let mut s: f32 = qf.iter().zip(krow).map(|(a, b)| a * b.to_f64() as f32).sum::<f32>() * p.scale;
            if p.softcap > 0.0 {
                s = p.softcap * (s / p.softcap).tanh();
            }
            s -= slope * (p.diag(i) - j as i64).unsigned_abs() as f32;
            let m_new = m.max(s);
            let corr = (m - m_new).exp();
            let e = (s - m_new).exp();
            l = l * corr + e;
            let vrow = &v[vs.offset + bi * vs.batch + j * vs.seq + kh * vs.head..][..d];
            for (a, x) in acc.iter_mut().zip(vrow) {
                *a = *a * corr + e * x.to_f64() as f32;
            }
            m = m_new;
        }
        let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
        for (o, a) in o.iter_mut().zip(&acc) {
            *o = T::from_f64((a * inv) as f64);
        }
    });
    Ok(T::to_cpu_storage_owned(out))
}
