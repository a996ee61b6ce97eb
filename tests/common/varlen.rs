//! Device-generic harness for packed (varlen) and paged calls, beside the dense one in
//! `mod.rs`: a [`VarlenCase`] is drawn from a seed (sequence lengths, GQA, head dim, masks,
//! softcap, ALiBi, pages, multimodal prefix ranges, index dtypes and devices, strided
//! views); [`check_varlen_case`] runs `attention_varlen` and the naive
//! `attention_ref_varlen` on the device in the case's dtype, and `attention_ref_varlen` in
//! f64 on the CPU as the oracle, with the dense harness's tolerance.
#![allow(dead_code)]

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention_ref_varlen, attention_varlen, AttnParams, Varlen};
use rand::{
    rngs::StdRng,
    seq::{IndexedRandom, SliceRandom},
    Rng, SeedableRng,
};

use super::grad::{grad_floor, params_on_cpu};
use super::{case_seed, measure_with, randn, to_f64_vec, CaseResult, FloorInputs, SweepStats};
use candle_core::Var;

/// The size space of a varlen sweep.
#[derive(Debug, Clone, Copy)]
pub struct VarlenLimits {
    /// Longest sequence.
    pub max_len: usize,
    /// Cap on `Σ len_q·len_k · heads · head_dim`, bounding the f64 oracle's time.
    pub max_work: usize,
}

impl VarlenLimits {
    pub fn cpu() -> Self {
        Self { max_len: 300, max_work: 6_000_000 }
    }
    pub fn gpu() -> Self {
        Self { max_len: 700, max_work: 40_000_000 }
    }
}

/// A paged cache: keys per block, blocks in the pool, and whether k/v are rank 3.
#[derive(Debug, Clone)]
pub struct Paging {
    pub page_size: usize,
    pub num_blocks: usize,
    pub max_blocks: usize,
    /// `(batch, max_blocks)`; unused entries hold out-of-range garbage on purpose.
    pub table: Vec<u32>,
    pub rank3: bool,
}

#[derive(Debug, Clone)]
pub struct VarlenCase {
    pub seed: u64,
    pub lens_q: Vec<usize>,
    pub lens_k: Vec<usize>,
    /// Extra slack in max_seqlen_q/k over the longest sequence.
    pub max_slack: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub softmax_scale: f32,
    pub causal: bool,
    pub window_left: Option<usize>,
    pub window_right: Option<usize>,
    pub softcap: Option<f32>,
    /// 0 none, 1 `(heads)`, 2 `(batch, heads)`.
    pub alibi: u8,
    pub paging: Option<Paging>,
    /// `(batch, max_ranges)` `[start, end)`.
    pub ranges: Option<(usize, Vec<[i32; 2]>)>,
    /// Index tensors as i32 instead of u32.
    pub i32_indices: bool,
    /// Index tensors on the compute device instead of the CPU.
    pub indices_on_device: bool,
    /// q, k, v as narrowed views of larger tensors.
    pub strided: [bool; 3],
}

const HEAD_DIMS: [usize; 14] = [8, 16, 32, 40, 64, 72, 96, 111, 128, 160, 256, 320, 500, 512];
const PAGE_SIZES: [usize; 6] = [16, 32, 256, 16, 7, 1];

impl VarlenCase {
    pub fn random(seed: u64, limits: &VarlenLimits) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let batch = *[0usize, 1, 1, 2, 3, 3, 4, 5, 6].choose(&mut rng).unwrap();
        let (heads, kv_heads) = match rng.random_range(0..4) {
            0 => (rng.random_range(1..=4), 1),
            r => {
                let ratio = [1, 2, 4][r - 1];
                let kv = rng.random_range(1..=3);
                (kv * ratio, kv)
            }
        };
        let head_dim =
            if rng.random_bool(0.85) { *HEAD_DIMS.choose(&mut rng).unwrap() } else { rng.random_range(1..=512) };
        // Each sequence: decode (1–16 queries against a cache), prefill (sq = sk), a chunk
        // (sq < sk), more queries than keys, or empty sides.
        let len = |rng: &mut StdRng| -> usize {
            match rng.random_range(0..10) {
                0 => 1,
                1..=5 => rng.random_range(1..=64.min(limits.max_len)),
                6..=8 => rng.random_range(1..=limits.max_len) | 1, // odd
                _ => rng.random_range(1..=limits.max_len),
            }
        };
        let (mut lens_q, mut lens_k) = (Vec::new(), Vec::new());
        for _ in 0..batch {
            let (q, k) = match rng.random_range(0..12) {
                0 => (0, len(&mut rng)),
                1 => (len(&mut rng), 0),
                2..=4 => (rng.random_range(1..=16), len(&mut rng)),
                5..=8 => {
                    let a = len(&mut rng);
                    (a, a)
                }
                9 | 10 => {
                    let (a, b) = (len(&mut rng), len(&mut rng));
                    (a.min(b), a.max(b))
                }
                _ => {
                    let (a, b) = (len(&mut rng), len(&mut rng));
                    (a.max(b), a.min(b))
                }
            };
            lens_q.push(q);
            lens_k.push(k);
        }
        let work = |lq: &[usize], lk: &[usize]| -> usize {
            lq.iter().zip(lk).map(|(a, b)| a.max(&1) * b.max(&1)).sum::<usize>() * heads * head_dim
        };
        while work(&lens_q, &lens_k) > limits.max_work {
            for (q, k) in lens_q.iter_mut().zip(lens_k.iter_mut()) {
                *q = *q * 2 / 3;
                *k = *k * 2 / 3;
            }
        }
        let max_k = lens_k.iter().copied().max().unwrap_or(0);
        let softmax_scale = if rng.random_bool(0.8) {
            1.0 / (head_dim as f32).sqrt()
        } else {
            match rng.random_range(0..4) {
                0 => 0.0,
                1 => -rng.random_range(0.05..1.0f32),
                _ => rng.random_range(0.05..1.0f32),
            }
        };
        let window = |rng: &mut StdRng| -> Option<usize> {
            if rng.random_bool(0.4) {
                None
            } else {
                Some(if rng.random_bool(0.4) { rng.random_range(0..4) } else { rng.random_range(0..=max_k + 2) })
            }
        };
        let (causal, window_left, window_right) = match rng.random_range(0..6) {
            0 | 1 => (false, None, None),
            2 | 3 => (true, None, None),
            4 => (true, window(&mut rng).or(Some(rng.random_range(0..=max_k + 1))), None),
            _ => (false, window(&mut rng), window(&mut rng)),
        };
        let softcap = rng.random_bool(0.2).then(|| rng.random_range(0.5..50.0f32));
        let alibi = *[0u8, 0, 0, 1, 2].choose(&mut rng).unwrap();
        let paging = rng.random_bool(0.4).then(|| {
            let page_size = *PAGE_SIZES.choose(&mut rng).unwrap();
            let used: Vec<usize> = lens_k.iter().map(|l| l.div_ceil(page_size)).collect();
            let max_blocks = used.iter().copied().max().unwrap_or(0) + rng.random_range(0..3);
            let num_blocks = used.iter().sum::<usize>() + rng.random_range(0..5);
            // Every block used once, in shuffled order; the rest of each row is garbage.
            let mut pool: Vec<u32> = (0..num_blocks as u32).collect();
            pool.shuffle(&mut rng);
            let mut next = pool.into_iter();
            let mut table = vec![0u32; batch * max_blocks];
            for (b, &u) in used.iter().enumerate() {
                for j in 0..max_blocks {
                    table[b * max_blocks + j] =
                        if j < u { next.next().unwrap() } else { num_blocks as u32 + rng.random_range(0..1000) };
                }
            }
            Paging { page_size, num_blocks, max_blocks, table, rank3: rng.random_bool(0.3) }
        });
        let ranges = rng.random_bool(0.3).then(|| {
            let max_ranges = rng.random_range(1..=3);
            let mut r = Vec::new();
            for &lk in &lens_k {
                for _ in 0..max_ranges {
                    let lk = lk as i32;
                    let (s, e) = match rng.random_range(0..6) {
                        0 => (0, rng.random_range(0..=lk)),
                        1 => (rng.random_range(0..=lk), lk),
                        2 => (0, lk),
                        3 => {
                            let s = rng.random_range(0..=lk);
                            (s, s)
                        }
                        _ => {
                            let a = rng.random_range(0..=lk);
                            let b = rng.random_range(0..=lk);
                            (a.min(b), a.max(b))
                        }
                    };
                    r.push([s, e]);
                }
            }
            (max_ranges, r)
        });
        let slack = if rng.random_bool(0.3) { rng.random_range(1..10) } else { 0 };
        Self {
            seed,
            lens_q,
            lens_k,
            max_slack: slack,
            heads,
            kv_heads,
            head_dim,
            softmax_scale,
            causal,
            window_left,
            window_right,
            softcap,
            alibi,
            paging,
            ranges,
            i32_indices: rng.random_bool(0.3),
            indices_on_device: rng.random_bool(0.5),
            strided: [rng.random_bool(0.25), rng.random_bool(0.25), rng.random_bool(0.25)],
        }
    }

    pub fn batch(&self) -> usize {
        self.lens_q.len()
    }

    fn cumulative(lens: &[usize]) -> Vec<u32> {
        let mut cu = vec![0u32];
        for &l in lens {
            cu.push(cu.last().unwrap() + l as u32);
        }
        cu
    }

    /// q, k, v on `dev` in `dtype`, the [`Varlen`] (index tensors on `dev` or the CPU as the
    /// case says) and the params.
    pub fn inputs(&self, dev: &Device, dtype: DType) -> Result<(Tensor, Tensor, Tensor, Varlen, AttnParams)> {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x5851_f42d_4c95_7f2d);
        let (h, hk, d) = (self.heads, self.kv_heads, self.head_dim);
        let total_q: usize = self.lens_q.iter().sum();
        let kv_dims: Vec<usize> = match &self.paging {
            None => vec![self.lens_k.iter().sum(), hk, d],
            Some(pg) if pg.rank3 => vec![pg.num_blocks * pg.page_size, hk, d],
            Some(pg) => vec![pg.num_blocks, pg.page_size, hk, d],
        };
        let make = |rng: &mut StdRng, dims: &[usize], strided: bool| -> Result<Tensor> {
            if strided {
                // A view into a larger tensor: offset rows, an extra head, padded rows.
                let mut big = dims.to_vec();
                big[0] += 2;
                let r = big.len();
                big[r - 2] += 1;
                big[r - 1] += 3;
                let n = big.iter().product();
                let t = Tensor::from_vec(randn(rng, n), big, dev)?.to_dtype(dtype)?;
                t.narrow(0, 1, dims[0])?.narrow(r - 2, 1, dims[r - 2])?.narrow(r - 1, 2, dims[r - 1])
            } else {
                let n = dims.iter().product();
                Tensor::from_vec(randn(rng, n), dims, dev)?.to_dtype(dtype)
            }
        };
        let q = make(&mut rng, &[total_q, h, d], self.strided[0])?;
        let k = make(&mut rng, &kv_dims, self.strided[1])?;
        let v = make(&mut rng, &kv_dims, self.strided[2])?;
        let idx_dev = if self.indices_on_device { dev.clone() } else { Device::Cpu };
        let ints = |vals: Vec<u32>, shape: Vec<usize>| -> Result<Tensor> {
            let t = Tensor::from_vec(vals, shape, &idx_dev)?;
            if self.i32_indices {
                let v: Vec<i32> = t.flatten_all()?.to_vec1::<u32>()?.into_iter().map(|x| x as i32).collect();
                Tensor::from_vec(v, t.dims(), &idx_dev)
            } else {
                Ok(t)
            }
        };
        let b = self.batch();
        let cu_q = ints(Self::cumulative(&self.lens_q), vec![b + 1])?;
        let cu_k = ints(Self::cumulative(&self.lens_k), vec![b + 1])?;
        let max_q = self.lens_q.iter().copied().max().unwrap_or(0) + self.max_slack;
        let max_k = self.lens_k.iter().copied().max().unwrap_or(0) + self.max_slack;
        let mut vl = Varlen::new(&cu_q, &cu_k, max_q, max_k);
        if let Some(pg) = &self.paging {
            let table = ints(pg.table.clone(), vec![b, pg.max_blocks])?;
            vl = vl.paged(&table, pg.page_size);
        }
        if let Some((mr, r)) = &self.ranges {
            let flat: Vec<i32> = r.iter().flatten().copied().collect();
            vl = vl.mm_prefix_ranges(&Tensor::from_vec(flat, (b, *mr, 2), &idx_dev)?);
        }
        let mut p = AttnParams::new(self.softmax_scale).causal(self.causal).window(self.window_left, self.window_right);
        p.softcap = self.softcap;
        let slopes_shape = match self.alibi {
            1 => Some(vec![h]),
            2 => Some(vec![b, h]),
            _ => None,
        };
        if let Some(shape) = slopes_shape {
            let n = shape.iter().product();
            let s: Vec<f32> = (0..n).map(|_| rng.random_range(0.001..=1.0f32)).collect();
            p.alibi_slopes = Some(Tensor::from_vec(s, shape, dev)?);
        }
        Ok((q, k, v, vl, p))
    }
}

/// The case's [`Varlen`] with every index tensor on the CPU (for the f64 oracle).
pub fn varlen_on_cpu(vl: &Varlen) -> Result<Varlen> {
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu);
    Ok(Varlen {
        seqlens_q: cpu(&vl.seqlens_q)?,
        seqlens_k: cpu(&vl.seqlens_k)?,
        block_table: vl.block_table.as_ref().map(cpu).transpose()?,
        mm_prefix_ranges: vl.mm_prefix_ranges.as_ref().map(cpu).transpose()?,
        ..vl.clone()
    })
}

/// `attention_ref_varlen` in f64 on the CPU on the upcast inputs.
pub fn varlen_oracle(q: &Tensor, k: &Tensor, v: &Tensor, vl: &Varlen, p: &AttnParams) -> Result<Tensor> {
    let up = |t: &Tensor| t.to_device(&Device::Cpu)?.to_dtype(DType::F64);
    let mut p64 = p.clone();
    p64.alibi_slopes = p.alibi_slopes.as_ref().map(|s| s.to_device(&Device::Cpu)).transpose()?;
    attention_ref_varlen(&up(q)?, &up(k)?, &up(v)?, &varlen_on_cpu(vl)?, &p64)
}

/// Runs one case on `dev` in `dtype` against the f64 oracle.
pub fn check_varlen_case(dev: &Device, dtype: DType, case: &VarlenCase) -> Result<CaseResult> {
    let (q, k, v, vl, p) = case.inputs(dev, dtype)?;
    let fused = attention_varlen(&q, &k, &v, &vl, &p)?;
    assert_eq!(fused.dims(), q.dims(), "fused output shape");
    assert_eq!(fused.dtype(), dtype, "fused output dtype");
    let naive = attention_ref_varlen(&q, &k, &v, &vl, &p)?;
    let oracle = varlen_oracle(&q, &k, &v, &vl, &p)?;
    measure_with(dtype, &fused, &naive, &oracle, &FloorInputs::new(&q, &k, &v, &oracle, p.softmax_scale)?)
}

/// Draws `n` cases and checks each; prints every failure with its seed and configuration
/// (rebuild with `VarlenCase::random(seed, &limits)`), and a summary line.
pub fn run_varlen_sweep(dev: &Device, dtype: DType, n: usize, seed: u64, limits: &VarlenLimits) -> Result<SweepStats> {
    let start = Instant::now();
    let mut st = SweepStats::default();
    let (mut paged, mut ranged, mut d_over_256) = (0, 0, 0);
    for i in 0..n {
        let case = VarlenCase::random(case_seed(seed, i), limits);
        let r = check_varlen_case(dev, dtype, &case)?;
        st.cases += 1;
        paged += usize::from(case.paging.is_some());
        ranged += usize::from(case.ranges.is_some());
        d_over_256 += usize::from(case.head_dim > 256);
        st.max_ratio = st.max_ratio.max(r.ratio());
        st.max_fused_abs = st.max_fused_abs.max(r.fused_max_abs);
        st.max_naive_abs = st.max_naive_abs.max(r.naive_max_abs);
        if r.naive_max_abs > 0.0 {
            st.max_fused_over_naive = st.max_fused_over_naive.max(r.fused_max_abs / r.naive_max_abs);
        }
        if !r.passes() {
            st.failures += 1;
            eprintln!(
                "FAIL varlen {dtype:?} on {:?}: case seed {} (sweep seed {seed}, index {i}, limits {limits:?})\n  {case:?}\n  {r:?} allowed {:.3e}",
                dev.location(),
                case.seed,
                r.allowed()
            );
        }
    }
    st.elapsed = start.elapsed();
    eprintln!(
        "varlen sweep {dtype:?} on {:?}: {} cases ({paged} paged, {ranged} with prefix ranges, {d_over_256} with head_dim > 256), \
         {} failures, max fused/allowed {:.3}, max fused/naive {:.3}, max abs err fused {:.3e} naive {:.3e}, {:.1} s",
        dev.location(),
        st.cases,
        st.failures,
        st.max_ratio,
        st.max_fused_over_naive,
        st.max_fused_abs,
        st.max_naive_abs,
        st.elapsed.as_secs_f64()
    );
    Ok(st)
}

/// Gradients of packed (unpaged) batches: dq, dk, dv through autograd on the fused op
/// against autograd through `attention_ref_varlen` in f64, with the dense harness's
/// tolerance (2 × the naive error in the same dtype + the derived floor, taken per
/// sequence; the floor takes its probabilities from `attention_ref_probs`, which knows no
/// multimodal ranges, so for cases with ranges it is the floor of the window alone, an
/// approximation that only decides cases where the naive error is about zero). Returns the
/// number of failing gradients, each printed with its case.
pub fn run_varlen_grad_sweep(dev: &Device, dtype: DType, n: usize, seed: u64) -> Result<usize> {
    let limits = VarlenLimits { max_len: 120, max_work: 1_500_000 };
    let mut failures = 0;
    let mut checked = 0;
    for i in 0..n {
        let mut case = VarlenCase::random(case_seed(seed, i), &limits);
        case.paging = None;
        if case.lens_q.iter().sum::<usize>() == 0 || case.lens_k.iter().sum::<usize>() == 0 {
            // No element to differentiate (and CUDA refuses zero-byte copies of the upstream).
            continue;
        }
        let (q, k, v, vl, p) = case.inputs(dev, dtype)?;
        let mut rng = StdRng::seed_from_u64(case.seed ^ 0x9bad);
        // The upstream in `dtype`, as both paths receive it (`super::grad::grad_run` says why).
        let up = Tensor::from_vec(randn(&mut rng, q.elem_count()), q.dims(), &Device::Cpu)?
            .to_dtype(dtype)?
            .to_dtype(DType::F32)?;
        let grads = |q: &Tensor, k: &Tensor, v: &Tensor, up: &Tensor, fused: bool| -> Result<[Tensor; 3]> {
            let vars = [q, k, v].map(|t| Var::from_tensor(&t.contiguous()?));
            let [vq, vk, vv] = vars;
            let (vq, vk, vv) = (vq?, vk?, vv?);
            let vl_here = if q.dtype() == DType::F64 { varlen_on_cpu(&vl)? } else { vl.clone() };
            let p = if q.dtype() == DType::F64 { params_on_cpu(&p)? } else { p.clone() };
            let out = if fused {
                attention_varlen(vq.as_tensor(), vk.as_tensor(), vv.as_tensor(), &vl_here, &p)?
            } else {
                attention_ref_varlen(vq.as_tensor(), vk.as_tensor(), vv.as_tensor(), &vl_here, &p)?
            };
            let up = up.to_device(q.device())?.to_dtype(DType::F64)?;
            let loss = (out.to_dtype(DType::F64)? * up)?.sum_all()?;
            let g = loss.backward()?;
            let get = |x: &Var| -> Result<Tensor> {
                match g.get(x.as_tensor()) {
                    Some(t) => Ok(t.clone()),
                    None => Ok(x.as_tensor().zeros_like()?), // a branch candle pruned: zero
                }
            };
            Ok([get(&vq)?, get(&vk)?, get(&vv)?])
        };
        let fused = grads(&q, &k, &v, &up, true)?;
        let naive = grads(&q, &k, &v, &up, false)?;
        let f64s = |t: &Tensor| t.to_device(&Device::Cpu)?.to_dtype(DType::F64);
        let (q64, k64, v64) = (f64s(&q)?, f64s(&k)?, f64s(&v)?);
        let oracle = grads(&q64, &k64, &v64, &up.to_dtype(DType::F64)?, false)?;
        // The floor per sequence, through the dense harness on each sequence sliced out.
        let mut floors = [0f64; 3];
        let (mut oq, mut ok) = (0usize, 0usize);
        for b in 0..case.batch() {
            let (lq, lk) = (case.lens_q[b], case.lens_k[b]);
            let seq = |t: &Tensor, o: usize, l: usize| t.narrow(0, o, l)?.unsqueeze(0);
            let mut pb = params_on_cpu(&p)?;
            if let Some(s) = pb.alibi_slopes.clone() {
                if s.rank() == 2 {
                    pb.alibi_slopes = Some(s.narrow(0, b, 1)?);
                }
            }
            let fb = grad_floor(
                dtype,
                &seq(&q64, oq, lq)?,
                &seq(&k64, ok, lk)?,
                &seq(&v64, ok, lk)?,
                &seq(&up.to_dtype(DType::F64)?, oq, lq)?,
                &pb,
                &[seq(&oracle[0], oq, lq)?, seq(&oracle[1], ok, lk)?, seq(&oracle[2], ok, lk)?],
            )?;
            for (f, x) in floors.iter_mut().zip(fb) {
                *f = f.max(x);
            }
            oq += lq;
            ok += lk;
        }
        for (j, name) in ["dq", "dk", "dv"].iter().enumerate() {
            let o = to_f64_vec(&oracle[j])?;
            let err = |t: &Tensor| -> Result<f64> {
                Ok(to_f64_vec(t)?.iter().zip(&o).filter(|(_, o)| o.is_finite()).fold(0f64, |a, (x, o)| {
                    if x.is_finite() {
                        a.max((x - o).abs())
                    } else {
                        f64::INFINITY
                    }
                }))
            };
            let (fe, ne) = (err(&fused[j])?, err(&naive[j])?);
            let allowed = 2.0 * ne + floors[j];
            checked += 1;
            if fe > allowed {
                failures += 1;
                eprintln!("FAIL varlen grad {dtype:?} {name}: fused {fe:.3e} > allowed {allowed:.3e} (naive {ne:.3e}), case {case:?}");
            }
        }
    }
    eprintln!(
        "varlen grad sweep {dtype:?} on {:?}: {checked} gradients of {n} cases, {failures} failures",
        dev.location()
    );
    Ok(failures)
}
