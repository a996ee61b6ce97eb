//! CPU-specific tests of packed (varlen) and paged batches: on every CPU path this machine
//! runs (`cpu_paths()`, forced through `with_cpu_path`), for f32, f16 and bf16,
//! * a packed batch computes, bit for bit, what dense calls on each sequence sliced out
//!   compute: output, LSE, and the backward's dq, dk, dv;
//! * a paged cache (any page size, blocks shuffled, rank 3 or 4) gives the same bits as
//!   the same keys packed;
//! * results do not depend on the rayon pool's thread count (1 vs 2 threads);
//! * head dims up to 512 against the f64 oracle, with the tolerance of `tests/common`
//!   (2 × the naive path's error in the same dtype + a derived floor); the backward's at
//!   those head dims is checked in `src/cpu/backward.rs`'s unit tests (its derived floors),
//!   and packed gradients here are bit for bit the dense ones;
//! * `attention_varlen_into` writes, into a reused buffer made NaN before each call, the
//!   bits `attention_varlen` returns.

mod common;

use candle_core::{DType, Device, Result, Tensor, Var, D};
use candle_fused_attn::{
    attention, attention_ref_varlen, attention_varlen, attention_varlen_into, attention_varlen_with_lse,
    attention_with_lse, cpu_paths, with_cpu_path, AttnParams, CpuPath, Varlen,
};
use common::{measure_with, FloorInputs};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// A packed batch: per-sequence (len_q, len_k), heads, kv heads, head dim.
#[derive(Clone, Debug)]
struct Batch {
    lens: Vec<(usize, usize)>,
    h: usize,
    hkv: usize,
    d: usize,
}

impl Batch {
    fn cu(&self, k: bool) -> Vec<u32> {
        let mut cu = vec![0u32];
        for &(lq, lk) in &self.lens {
            cu.push(cu[cu.len() - 1] + if k { lk } else { lq } as u32);
        }
        cu
    }
    fn total(&self, k: bool) -> usize {
        *self.cu(k).last().unwrap() as usize
    }
    fn varlen(&self) -> Result<Varlen> {
        let dev = Device::Cpu;
        let max_q = self.lens.iter().map(|l| l.0).max().unwrap_or(0);
        let max_k = self.lens.iter().map(|l| l.1).max().unwrap_or(0);
        Ok(Varlen::new(&Tensor::new(self.cu(false), &dev)?, &Tensor::new(self.cu(true), &dev)?, max_q, max_k))
    }
    /// q `(total_q, h, d)`, k and v `(total_k, hkv, d)`, dO like q, in `dtype`.
    fn inputs(&self, seed: u64, dtype: DType) -> Result<[Tensor; 4]> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut t = |rows: usize, heads: usize| -> Result<Tensor> {
            let n = rows * heads * self.d;
            let v: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            Tensor::from_vec(v, (rows, heads, self.d), &Device::Cpu)?.to_dtype(dtype)
        };
        let (tq, tk) = (self.total(false), self.total(true));
        Ok([t(tq, self.h)?, t(tk, self.hkv)?, t(tk, self.hkv)?, t(tq, self.h)?])
    }
}

/// Mixed lengths: empty sequences (no query, no key), decode rows against long contexts,
/// prefill, lengths around the tile sizes, sq > sk.
fn mixed(h: usize, hkv: usize, d: usize) -> Batch {
    let lens = vec![(1, 300), (130, 130), (0, 5), (7, 0), (17, 40), (1, 1), (49, 257), (60, 20), (3, 600)];
    Batch { lens, h, hkv, d }
}

fn params_variants(batch: &Batch, seed: u64) -> Vec<AttnParams> {
    let scale = 1.0 / (batch.d as f32).sqrt();
    let mut rng = StdRng::seed_from_u64(seed);
    let slopes: Vec<f32> = (0..batch.lens.len() * batch.h).map(|_| rng.random_range(0.0..0.2)).collect();
    let slopes = Tensor::from_vec(slopes, (batch.lens.len(), batch.h), &Device::Cpu).unwrap();
    vec![
        AttnParams::new(scale),
        AttnParams::new(scale).causal(true),
        AttnParams::new(scale).window(Some(37), Some(5)).softcap(8.0),
        AttnParams::new(scale).causal(true).alibi_slopes(&slopes),
    ]
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_dtype(DType::F32)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

/// `assert_eq!` on the bits, naming the first differing element.
fn assert_same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.dims(), b.dims(), "{what}: shapes");
    let (x, y) = (bits(a), bits(b));
    if let Some(i) = x.iter().zip(&y).position(|(p, q)| p != q) {
        panic!("{what}: element {i} differs: {} vs {}", f32::from_bits(x[i]), f32::from_bits(y[i]));
    }
}

/// The params of sequence `b` alone (its row of `(batch, heads)` ALiBi slopes).
fn seq_params(p: &AttnParams, b: usize) -> AttnParams {
    let slopes = p.alibi_slopes.as_ref().map(|s| s.narrow(0, b, 1).unwrap());
    AttnParams { alibi_slopes: slopes, ..p.clone() }
}

/// The dense forward (out, lse) of every sequence sliced out, concatenated in the packed
/// layout: out `(total_q, h, d)`, lse `(h, total_q)`.
fn per_sequence_forward(batch: &Batch, q: &Tensor, k: &Tensor, v: &Tensor, p: &AttnParams) -> Result<(Tensor, Tensor)> {
    let (cq, ck) = (batch.cu(false), batch.cu(true));
    let (mut outs, mut lses) = (Vec::new(), Vec::new());
    for (b, &(lq, lk)) in batch.lens.iter().enumerate() {
        if lq == 0 {
            continue;
        }
        let qs = q.narrow(0, cq[b] as usize, lq)?.unsqueeze(0)?;
        let ks = k.narrow(0, ck[b] as usize, lk)?.unsqueeze(0)?;
        let vs = v.narrow(0, ck[b] as usize, lk)?.unsqueeze(0)?;
        let (o, l) = attention_with_lse(&qs, &ks, &vs, &seq_params(p, b))?;
        outs.push(o.squeeze(0)?);
        lses.push(l.squeeze(0)?);
    }
    Ok((Tensor::cat(&outs, 0)?, Tensor::cat(&lses, 1)?))
}

fn forced<R>(path: CpuPath, f: impl FnOnce() -> R) -> R {
    with_cpu_path(path, f).unwrap()
}

#[test]
fn packed_forward_is_bit_exact_with_dense_calls_per_sequence() -> Result<()> {
    for path in cpu_paths() {
        for (n, dtype) in DTYPES.into_iter().enumerate() {
            for (hh, hkv, d) in [(4, 2, 64), (3, 1, 40), (2, 2, 13)] {
                let batch = mixed(hh, hkv, d);
                let [q, k, v, _] = batch.inputs(10 + n as u64, dtype)?;
                for (i, p) in params_variants(&batch, 7).iter().enumerate() {
                    let (out, lse) = forced(path, || attention_varlen_with_lse(&q, &k, &v, &batch.varlen()?, p))?;
                    let (want, want_lse) = forced(path, || per_sequence_forward(&batch, &q, &k, &v, p))?;
                    let what = format!("{path} {dtype:?} h{hh}/{hkv} d{d} params #{i}");
                    assert_same(&out, &want, &format!("{what}: out"));
                    assert_same(&lse, &want_lse, &format!("{what}: lse"));
                    // Without the LSE too (another code path for the output alone).
                    let out2 = forced(path, || attention_varlen(&q, &k, &v, &batch.varlen()?, p))?;
                    assert_same(&out2, &want, &format!("{what}: out without lse"));
                }
            }
        }
    }
    Ok(())
}

/// A packed batch of prefill sequences long enough that its work items fill several waves
/// (src/cpu/forward.rs `run_items`: at least 64 items per thread each; here 2 and 3 threads,
/// 8 heads over 2 kv heads, so a sequence of L queries is 2·⌈L/12⌉ items) and without key
/// splits (every sequence has more than 16 queries): the waves then run pipelined (each wave's
/// key packing and items as tasks from one counter, the packed keys alternating between two
/// buffers, so the third wave reuses the first's). Its bits are the dense calls' on each
/// sequence, on every path, dtype and mask.
#[test]
fn pipelined_waves_are_bit_exact_with_dense_calls_per_sequence() -> Result<()> {
    let lens = [700, 650, 40, 600, 333, 710, 129, 500, 640, 257];
    let batch = Batch { lens: lens.iter().map(|&l| (l, l + l % 7)).collect(), h: 8, hkv: 2, d: 24 };
    for path in cpu_paths() {
        for (n, dtype) in DTYPES.into_iter().enumerate() {
            let [q, k, v, _] = batch.inputs(60 + n as u64, dtype)?;
            for (i, p) in params_variants(&batch, 8).iter().enumerate() {
                let (want, want_lse) = forced(path, || per_sequence_forward(&batch, &q, &k, &v, p))?;
                for threads in [2, 3] {
                    let (out, lse) = pool(threads)
                        .install(|| forced(path, || attention_varlen_with_lse(&q, &k, &v, &batch.varlen()?, p)))?;
                    let what = format!("{path} {dtype:?} params #{i}, {threads} threads");
                    assert_same(&out, &want, &format!("{what}: out"));
                    assert_same(&lse, &want_lse, &format!("{what}: lse"));
                }
            }
        }
    }
    Ok(())
}

/// The keys of `batch` as a paged cache of `page`-key blocks, shuffled, with unused blocks
/// of garbage (NaN) between them: (k, v, block table); rank 4 or rank 3.
fn paginate(
    batch: &Batch,
    k: &Tensor,
    v: &Tensor,
    page: usize,
    rank4: bool,
    seed: u64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let ck = batch.cu(true);
    let used: Vec<usize> = batch.lens.iter().map(|l| l.1.div_ceil(page)).collect();
    let max_blocks = used.iter().copied().max().unwrap_or(0).max(1);
    let n_used: usize = used.iter().sum();
    let num_blocks = n_used + 3;
    let mut order: Vec<usize> = (0..num_blocks).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let (hkv, d) = (batch.hkv, batch.d);
    let nan = Tensor::full(f32::NAN, (num_blocks * page, hkv, d), &Device::Cpu)?.to_dtype(k.dtype())?;
    let (mut kc, mut vc) = (nan.clone(), nan);
    let mut table = vec![0u32; batch.lens.len() * max_blocks];
    let mut next = 0;
    for (b, &n) in used.iter().enumerate() {
        for j in 0..n {
            let blk = order[next];
            next += 1;
            table[b * max_blocks + j] = blk as u32;
            let start = ck[b] as usize + j * page;
            let rows = page.min(ck[b + 1] as usize - start);
            kc = kc.slice_assign(&[blk * page..blk * page + rows, 0..hkv, 0..d], &k.narrow(0, start, rows)?)?;
            vc = vc.slice_assign(&[blk * page..blk * page + rows, 0..hkv, 0..d], &v.narrow(0, start, rows)?)?;
        }
    }
    let table = Tensor::from_vec(table, (batch.lens.len(), max_blocks), &Device::Cpu)?;
    if rank4 {
        kc = kc.reshape((num_blocks, page, hkv, d))?;
        vc = vc.reshape((num_blocks, page, hkv, d))?;
    }
    Ok((kc, vc, table))
}

#[test]
fn paged_caches_give_the_bits_of_packed_keys() -> Result<()> {
    for path in cpu_paths() {
        for (n, dtype) in DTYPES.into_iter().enumerate() {
            let batch = mixed(4, 2, 32);
            let [q, k, v, _] = batch.inputs(20 + n as u64, dtype)?;
            for (pi, p) in params_variants(&batch, 3).iter().enumerate().step_by(3) {
                let (want, want_lse) = forced(path, || attention_varlen_with_lse(&q, &k, &v, &batch.varlen()?, p))?;
                for (page, rank4) in [(1, true), (7, false), (16, true), (32, false), (256, true)] {
                    let (kc, vc, table) = paginate(&batch, &k, &v, page, rank4, page as u64)?;
                    let vl = batch.varlen()?.paged(&table, page);
                    let (out, lse) = forced(path, || attention_varlen_with_lse(&q, &kc, &vc, &vl, p))?;
                    let what = format!("{path} {dtype:?} params #{pi} page {page} rank4 {rank4}");
                    assert_same(&out, &want, &format!("{what}: out"));
                    assert_same(&lse, &want_lse, &format!("{what}: lse"));
                }
            }
        }
    }
    Ok(())
}

/// The packed backward through autograd: (dq, dk, dv) of `L = Σ out·dO`.
fn packed_grads(batch: &Batch, x: &[Tensor; 4], p: &AttnParams, varlen: &Varlen) -> Result<[Tensor; 3]> {
    let [q, k, v, d_o] = x;
    let (qv, kv, vv) = (Var::from_tensor(q)?, Var::from_tensor(k)?, Var::from_tensor(v)?);
    let out = attention_varlen(qv.as_tensor(), kv.as_tensor(), vv.as_tensor(), varlen, p)?;
    let grads = (out * d_o)?.sum_all()?.backward()?;
    let g = |t: &Var, like: &Tensor| -> Result<Tensor> {
        match grads.get(t.as_tensor()) {
            Some(g) => Ok(g.clone()),
            None => like.zeros_like(),
        }
    };
    let _ = batch;
    Ok([g(&qv, q)?, g(&kv, k)?, g(&vv, v)?])
}

/// The dense backward of every sequence sliced out (through autograd, as the packed one:
/// candle adds each gradient to zeros, which turns -0 into +0 on both sides), in the
/// packed layout.
fn per_sequence_grads(batch: &Batch, x: &[Tensor; 4], p: &AttnParams) -> Result<[Tensor; 3]> {
    let [q, k, v, d_o] = x;
    let (cq, ck) = (batch.cu(false), batch.cu(true));
    let (mut dqs, mut dks, mut dvs) = (Vec::new(), Vec::new(), Vec::new());
    for (b, &(lq, lk)) in batch.lens.iter().enumerate() {
        let qs = Var::from_tensor(&q.narrow(0, cq[b] as usize, lq)?.unsqueeze(0)?)?;
        let dos = d_o.narrow(0, cq[b] as usize, lq)?.unsqueeze(0)?;
        let ks = Var::from_tensor(&k.narrow(0, ck[b] as usize, lk)?.unsqueeze(0)?)?;
        let vs = Var::from_tensor(&v.narrow(0, ck[b] as usize, lk)?.unsqueeze(0)?)?;
        let out = attention(qs.as_tensor(), ks.as_tensor(), vs.as_tensor(), &seq_params(p, b))?;
        let grads = (out * dos)?.sum_all()?.backward()?;
        let g = |t: &Var| -> Result<Tensor> {
            match grads.get(t.as_tensor()) {
                Some(g) => g.squeeze(0),
                None => t.as_tensor().zeros_like()?.squeeze(0),
            }
        };
        dqs.push(g(&qs)?);
        dks.push(g(&ks)?);
        dvs.push(g(&vs)?);
    }
    Ok([Tensor::cat(&dqs, 0)?, Tensor::cat(&dks, 0)?, Tensor::cat(&dvs, 0)?])
}

#[test]
fn packed_backward_is_bit_exact_with_dense_backward_per_sequence() -> Result<()> {
    for path in cpu_paths() {
        for (n, dtype) in DTYPES.into_iter().enumerate() {
            for (hh, hkv, d) in [(4, 2, 64), (3, 1, 24)] {
                let batch = mixed(hh, hkv, d);
                let x = batch.inputs(30 + n as u64, dtype)?;
                for (i, p) in params_variants(&batch, 5).iter().enumerate() {
                    let got = forced(path, || packed_grads(&batch, &x, p, &batch.varlen()?))?;
                    let want = forced(path, || per_sequence_grads(&batch, &x, p))?;
                    for (name, (g, w)) in ["dq", "dk", "dv"].iter().zip(got.iter().zip(&want)) {
                        assert_eq!(g.dtype(), dtype);
                        assert_same(g, w, &format!("{path} {dtype:?} h{hh}/{hkv} d{d} params #{i}: {name}"));
                    }
                }
            }
        }
    }
    Ok(())
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
}

/// Prefill-sized sequences (more than 16 queries each): no decode key split, whose count
/// follows the thread count by design (as the dense path's does), so the forward's bits
/// must not depend on the pool. The backward's cut is thread-independent for every length.
#[test]
fn results_do_not_depend_on_the_thread_count() -> Result<()> {
    let prefill = Batch { lens: vec![(300, 300), (17, 40), (100, 700), (64, 64), (33, 1)], h: 4, hkv: 1, d: 32 };
    let decode = mixed(4, 2, 32);
    for path in cpu_paths() {
        for dtype in [DType::F32, DType::BF16] {
            let x = prefill.inputs(40, dtype)?;
            let p = AttnParams::new(0.2).causal(true);
            let run = |threads: usize| {
                pool(threads)
                    .install(|| forced(path, || attention_varlen_with_lse(&x[0], &x[1], &x[2], &prefill.varlen()?, &p)))
            };
            let ((o1, l1), (o2, l2)) = (run(1)?, run(2)?);
            assert_same(&o1, &o2, &format!("{path} {dtype:?}: out, 1 vs 2 threads"));
            assert_same(&l1, &l2, &format!("{path} {dtype:?}: lse, 1 vs 2 threads"));
            // The backward alone, from one forward's graph (the forward's decode splits
            // follow the thread count by design).
            for (b, x) in [(&prefill, x.clone()), (&decode, decode.inputs(41, dtype)?)] {
                let (qv, kv, vv) = (Var::from_tensor(&x[0])?, Var::from_tensor(&x[1])?, Var::from_tensor(&x[2])?);
                let out = forced(path, || {
                    attention_varlen(qv.as_tensor(), kv.as_tensor(), vv.as_tensor(), &b.varlen()?, &p)
                })?;
                let loss = (out * &x[3])?.sum_all()?;
                let grads = |threads: usize| {
                    pool(threads).install(|| {
                        forced(path, || -> Result<Vec<Tensor>> {
                            let g = loss.backward()?;
                            Ok([&qv, &kv, &vv].iter().map(|t| g.get(t.as_tensor()).unwrap().clone()).collect())
                        })
                    })
                };
                let (g1, g2) = (grads(1)?, grads(2)?);
                for (name, (a, c)) in ["dq", "dk", "dv"].iter().zip(g1.iter().zip(&g2)) {
                    assert_same(a, c, &format!("{path} {dtype:?} {:?}: {name}, 1 vs 2 threads", b.lens));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn prefix_ranges_per_sequence_forward_and_backward() -> Result<()> {
    let batch = Batch { lens: vec![(40, 40), (1, 90), (70, 300), (0, 3)], h: 4, hkv: 2, d: 16 };
    let ranges = Tensor::new(
        &[[[2i32, 9], [20, 35]], [[0, 0], [50, 80]], [[230, 290], [0, 0]], [[0, 0], [0, 0]]],
        &Device::Cpu,
    )?;
    let (cq, ck) = (batch.cu(false), batch.cu(true));
    for path in cpu_paths() {
        for dtype in DTYPES {
            let x = batch.inputs(50, dtype)?;
            let p = AttnParams::new(0.25).causal(true);
            let vl = batch.varlen()?.mm_prefix_ranges(&ranges);
            let (out, lse) = forced(path, || attention_varlen_with_lse(&x[0], &x[1], &x[2], &vl, &p))?;
            let plain = forced(path, || attention_varlen(&x[0], &x[1], &x[2], &batch.varlen()?, &p))?;
            assert_ne!(bits(&out), bits(&plain), "{path} {dtype:?}: the ranges changed nothing");
            let grads = forced(path, || packed_grads(&batch, &x, &p, &vl))?;
            for (b, &(lq, lk)) in batch.lens.iter().enumerate() {
                if lq == 0 {
                    continue;
                }
                let one = Batch { lens: vec![(lq, lk)], ..batch.clone() };
                let nq = |t: &Tensor| t.narrow(0, cq[b] as usize, lq);
                let nk = |t: &Tensor| t.narrow(0, ck[b] as usize, lk);
                let xs = [nq(&x[0])?, nk(&x[1])?, nk(&x[2])?, nq(&x[3])?];
                let vl1 = one.varlen()?.mm_prefix_ranges(&ranges.narrow(0, b, 1)?);
                let (o1, l1) = forced(path, || attention_varlen_with_lse(&xs[0], &xs[1], &xs[2], &vl1, &p))?;
                let what = format!("{path} {dtype:?} sequence {b}");
                assert_same(&nq(&out)?, &o1, &format!("{what}: out"));
                assert_same(&lse.narrow(1, cq[b] as usize, lq)?, &l1, &format!("{what}: lse"));
                let g1 = forced(path, || packed_grads(&one, &xs, &p, &vl1))?;
                assert_same(&nq(&grads[0])?, &g1[0], &format!("{what}: dq"));
                assert_same(&nk(&grads[1])?, &g1[1], &format!("{what}: dk"));
                assert_same(&nk(&grads[2])?, &g1[2], &format!("{what}: dv"));
            }
        }
    }
    Ok(())
}

/// Head dims up to 512, packed and paged, every path and dtype, against the f64 oracle.
#[test]
fn large_head_dims_match_the_oracle() -> Result<()> {
    for (n, d) in [8usize, 72, 264, 320, 500, 512].into_iter().enumerate() {
        let batch = Batch { lens: vec![(1, 70), (60, 60), (20, 33)], h: 4, hkv: 2, d };
        for path in cpu_paths() {
            for dtype in DTYPES {
                let [q, k, v, _] = batch.inputs(60 + n as u64, dtype)?;
                let p = AttnParams::new(1.0 / (d as f32).sqrt()).causal(n % 2 == 0);
                let vl = batch.varlen()?;
                let fused = forced(path, || attention_varlen(&q, &k, &v, &vl, &p))?;
                let naive = attention_ref_varlen(&q, &k, &v, &vl, &p)?;
                let up = |t: &Tensor| t.to_dtype(DType::F64);
                let oracle = attention_ref_varlen(&up(&q)?, &up(&k)?, &up(&v)?, &vl, &p)?;
                let r4 = |t: &Tensor| t.unsqueeze(0);
                let floor = FloorInputs::new(&r4(&q)?, &r4(&k)?, &r4(&v)?, &r4(&oracle)?, p.softmax_scale)?;
                let r = measure_with(dtype, &fused, &naive, &oracle, &floor)?;
                assert!(r.passes(), "{path} {dtype:?} d{d}: {r:?} allowed {:.3e}", r.allowed());
                let (kc, vc, table) = paginate(&batch, &k, &v, 16, true, d as u64)?;
                let paged = forced(path, || attention_varlen(&q, &kc, &vc, &vl.clone().paged(&table, 16), &p))?;
                assert_same(&paged, &fused, &format!("{path} {dtype:?} d{d}: paged"));
            }
        }
    }
    Ok(())
}

#[test]
fn empty_and_degenerate_batches() -> Result<()> {
    // Only sequences without queries or keys: zeros and -inf.
    let batch = Batch { lens: vec![(0, 4), (3, 0), (0, 0)], h: 2, hkv: 1, d: 8 };
    let [q, k, v, _] = batch.inputs(80, DType::F32)?;
    let (out, lse) = attention_varlen_with_lse(&q, &k, &v, &batch.varlen()?, &AttnParams::new(0.3))?;
    assert_eq!(out.dims(), &[3, 2, 8]);
    assert!(out.flatten_all()?.to_vec1::<f32>()?.iter().all(|&x| x == 0.0));
    assert!(lse.flatten_all()?.to_vec1::<f32>()?.iter().all(|&x| x == f32::NEG_INFINITY));
    let _ = D::Minus1;
    Ok(())
}

/// Makes `out`, an output buffer kept between calls, NaN in place (and checks that it is),
/// so that the next call must write every element of it.
fn dirty(out: &Tensor) -> Result<()> {
    let nan = Tensor::full(f32::NAN, out.shape(), &Device::Cpu)?.to_dtype(out.dtype())?;
    out.slice_set(&nan, 0, 0)?;
    let all_nan = out.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?.iter().all(|x| x.is_nan());
    assert!(all_nan, "the buffer was not made NaN");
    Ok(())
}

/// `attention_varlen_into` gives `attention_varlen`'s bits in one buffer reused for every
/// call and made NaN before each: every path and dtype, GQA, MQA and MHA, lengths 0, 1 and
/// odd, sequences without keys and causal rows that see no key (zeros), every params
/// variant; `out` is a narrow of a larger buffer, whose other rows stay untouched.
#[test]
fn into_a_reused_buffer_gives_the_bits_of_attention_varlen() -> Result<()> {
    for path in cpu_paths() {
        for (n, dtype) in DTYPES.into_iter().enumerate() {
            for (hh, hkv, d) in [(4, 2, 64), (3, 1, 40), (2, 2, 13)] {
                let batch = mixed(hh, hkv, d);
                let [q, k, v, _] = batch.inputs(90 + n as u64, dtype)?;
                let vl = batch.varlen()?;
                let total_q = batch.total(false);
                let buf = Tensor::zeros((total_q + 5, hh, d), dtype, &Device::Cpu)?;
                let out = buf.narrow(0, 3, total_q)?; // a start offset of 3 rows
                for (i, p) in params_variants(&batch, 7).iter().enumerate() {
                    let want = forced(path, || attention_varlen(&q, &k, &v, &vl, p))?;
                    dirty(&out)?;
                    forced(path, || attention_varlen_into(&out, &q, &k, &v, &vl, p))?;
                    assert_same(&out, &want, &format!("{path} {dtype:?} h{hh}/{hkv} d{d} params #{i}: into"));
                }
                let zero = |t: Tensor| bits(&t).iter().all(|&b| b == 0);
                assert!(zero(buf.narrow(0, 0, 3)?) && zero(buf.narrow(0, 3 + total_q, 2)?), "rows outside out written");
            }
        }
    }
    Ok(())
}

/// `attention_varlen_into` on a paged cache, on q, k and v that are views of one fused QKV
/// buffer (one storage, read-locked once), on k = v, and on batches with nothing to compute.
#[test]
fn into_paged_fused_qkv_and_empty_batches() -> Result<()> {
    let dev = Device::Cpu;
    for (n, dtype) in DTYPES.into_iter().enumerate() {
        let batch = mixed(4, 2, 32);
        let [q, k, v, _] = batch.inputs(95 + n as u64, dtype)?;
        let p = AttnParams::new(0.2).causal(true);
        let out = Tensor::zeros(q.shape(), dtype, &dev)?;
        let want = attention_varlen(&q, &k, &v, &batch.varlen()?, &p)?;
        for (page, rank4) in [(16, true), (7, false)] {
            let (kc, vc, table) = paginate(&batch, &k, &v, page, rank4, page as u64)?;
            dirty(&out)?;
            attention_varlen_into(&out, &q, &kc, &vc, &batch.varlen()?.paged(&table, page), &p)?;
            assert_same(&out, &want, &format!("{dtype:?}: paged, page {page}"));
        }

        // Self-attention with q, k and v as head slices of one (total, h + 2·hkv, d) buffer.
        let selfb = Batch { lens: vec![(5, 5), (1, 1), (0, 0), (33, 33)], h: 4, hkv: 2, d: 16 };
        let total = selfb.total(false);
        let qkv = Tensor::randn(0f32, 1., (total, 8, 16), &dev)?.to_dtype(dtype)?;
        let (q, k, v) = (qkv.narrow(1, 0, 4)?, qkv.narrow(1, 4, 2)?, qkv.narrow(1, 6, 2)?);
        let out = Tensor::zeros((total, 4, 16), dtype, &dev)?;
        for (what, k, v) in [("fused qkv", &k, &v), ("k = v", &k, &k)] {
            let want = attention_varlen(&q, k, v, &selfb.varlen()?, &p)?;
            dirty(&out)?;
            attention_varlen_into(&out, &q, k, v, &selfb.varlen()?, &p)?;
            assert_same(&out, &want, &format!("{dtype:?}: {what}"));
        }

        // Only sequences without queries or keys: zeros; no query rows at all: nothing.
        let empty = Batch { lens: vec![(0, 4), (3, 0), (0, 0)], h: 2, hkv: 1, d: 8 };
        let [q, k, v, _] = empty.inputs(96, dtype)?;
        let out = Tensor::zeros((3, 2, 8), dtype, &dev)?;
        dirty(&out)?;
        attention_varlen_into(&out, &q, &k, &v, &empty.varlen()?, &p)?;
        assert!(bits(&out).iter().all(|&b| b == 0), "{dtype:?}: rows without keys are zeros");
        let none = Batch { lens: vec![(0, 4)], h: 2, hkv: 1, d: 8 };
        let [q, k, v, _] = none.inputs(97, dtype)?;
        attention_varlen_into(&Tensor::zeros((0, 2, 8), dtype, &dev)?, &q, &k, &v, &none.varlen()?, &p)?;
    }
    Ok(())
}
