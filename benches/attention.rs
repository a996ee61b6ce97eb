//! Fused attention against the naive `attention_ref`, per device and dtype.
//!
//! Groups are named `{device}_fused_attn_{dtype}` and `{device}_naive_{dtype}` (the
//! candle-nn bench style), one benchmark per shape `b{B}_h{H}_kv{Hkv}_q{Sq}_k{Sk}_d{D}`
//! with a `_causal` suffix where masked. Throughput is in attention FLOPs,
//! 4·B·H·Sq·Sk·D (halved for causal), so criterion's `elem/s` reads as FLOP/s.
//!
//! `cargo bench --bench attention` runs the CPU groups; with `--features cuda` and a CUDA
//! device the `cuda_` groups (the bf16 tables of the CUDA issues) run as well. Pass a
//! filter to run one group, e.g. `cargo bench --bench attention -- cpu_fused_attn_f32`.
//!
//! Timing: on the CPU, the wall clock around a batch of reps. On CUDA, each rep the way
//! `scripts/bench_torch.py` times PyTorch (`triton.testing.do_bench`), so the two compare
//! in the same run: a 256 MiB write flushes the L2 first, then CUDA events on candle's stream
//! bracket the rep.

use std::time::{Duration, Instant};

use candle_core::{DType, Device, Tensor};
use candle_fused_attn::{attention, attention_backward, attention_ref, attention_with_lse, AttnParams};
#[cfg(feature = "cuda")]
use candle_fused_attn::{attention_varlen, Varlen};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// One bench row, written (B,H,Hkv,Sq,Sk,D) + causal.
#[derive(Clone, Copy)]
struct Shape {
    b: usize,
    h: usize,
    hkv: usize,
    sq: usize,
    sk: usize,
    d: usize,
    causal: bool,
}

const fn shape((b, h, hkv, sq, sk, d): (usize, usize, usize, usize, usize, usize), causal: bool) -> Shape {
    Shape { b, h, hkv, sq, sk, d, causal }
}

impl Shape {
    fn flops(&self) -> u64 {
        let full = 4 * self.b * self.h * self.sq * self.sk * self.d;
        (if self.causal { full / 2 } else { full }) as u64
    }
    fn label(&self) -> String {
        let Shape { b, h, hkv, sq, sk, d, causal } = *self;
        format!("b{b}_h{h}_kv{hkv}_q{sq}_k{sk}_d{d}{}", if causal { "_causal" } else { "" })
    }
}

/// The CPU rows: a short prefill, the 2048 row causal and not, a GQA decode step.
const CPU_SHAPES: &[Shape] = &[
    shape((1, 8, 8, 512, 512, 64), false),
    shape((1, 16, 16, 2048, 2048, 64), false),
    shape((1, 16, 16, 2048, 2048, 64), true),
    shape((1, 32, 8, 1, 4096, 128), false), // decode
];

/// The bf16 GPU rows: prefill, then decode (few queries against long caches).
#[cfg(feature = "cuda")]
const CUDA_SHAPES: &[Shape] = &[
    // Issue 14's prefill table, causal and not, then d256 and GQA 8:1 rows; then decode.
    shape((1, 8, 8, 512, 512, 64), false),
    shape((1, 8, 8, 512, 512, 64), true),
    shape((16, 16, 16, 2048, 2048, 64), false),
    shape((16, 16, 16, 2048, 2048, 64), true),
    shape((16, 16, 16, 2048, 2048, 128), false),
    shape((16, 16, 16, 2048, 2048, 128), true),
    shape((4, 32, 32, 4096, 4096, 128), false),
    shape((4, 32, 32, 4096, 4096, 128), true),
    shape((1, 32, 32, 16384, 16384, 128), false),
    shape((1, 32, 32, 16384, 16384, 128), true),
    shape((16, 16, 16, 2048, 2048, 256), false),
    shape((16, 16, 16, 2048, 2048, 256), true),
    shape((4, 32, 4, 4096, 4096, 128), false),
    shape((4, 32, 4, 4096, 4096, 128), true),
    shape((8, 32, 8, 1, 8192, 128), false),
    shape((1, 32, 8, 1, 32768, 128), false),
    shape((1, 32, 8, 1, 2048, 128), false),
    shape((32, 32, 8, 1, 4096, 128), false),
    shape((1, 32, 8, 4, 8192, 128), false),
];

/// Head dims between the table's, as groups of their own (`cuda_fused_attn_hd_bf16`): d96
/// (Phi-3) and d80 (Phi-2) run on the Hopper d96 instance (scripts/bench_torch.py
/// `--only headdim` times torch on the same rows).
#[cfg(feature = "cuda")]
const HEAD_DIM_SHAPES: &[Shape] = &[
    shape((16, 16, 16, 2048, 2048, 96), false),
    shape((16, 16, 16, 2048, 2048, 96), true),
    shape((4, 32, 32, 4096, 4096, 96), false),
    shape((16, 16, 16, 2048, 2048, 80), false),
];

/// The FlashAttention-3 paper's non-causal 16k shapes: hidden size 2048, so 32 heads at d64,
/// 16 at d128 (issue 14's d128 row has 32) and 8 at d256, batch 1 (`cuda_fused_attn_fa3_bf16`;
/// the paper's H100 figures are 497 TF/s at d64, 648 at d128, 740 at d256).
/// scripts/bench_torch.py `--only fa3` times torch on the same rows.
#[cfg(feature = "cuda")]
const FA3_SHAPES: &[Shape] = &[
    shape((1, 32, 32, 16384, 16384, 64), false),
    shape((1, 16, 16, 16384, 16384, 128), false),
    shape((1, 8, 8, 16384, 16384, 256), false),
];

fn device_prefix(dev: &Device) -> &'static str {
    if dev.is_cpu() {
        "cpu"
    } else if dev.is_cuda() {
        "cuda"
    } else {
        "other"
    }
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        _ => "other",
    }
}

/// Benches fused and naive attention on `dev` for every `(dtype, shape)`. The naive path
/// is skipped where it would not fit (`naive_max_scores` bounds its B·H·Sq·Sk f32 scores).
fn bench_device(c: &mut Criterion, dev: &Device, dtypes: &[DType], shapes: &[Shape], naive_max_scores: usize) {
    bench_device_tagged(c, dev, dtypes, shapes, naive_max_scores, "");
}

/// [`bench_device`] with `tag` after the kind in the group names (`cuda_fused_attn{tag}_bf16`),
/// so that a filter of the untagged groups leaves these out.
fn bench_device_tagged(
    c: &mut Criterion,
    dev: &Device,
    dtypes: &[DType],
    shapes: &[Shape],
    naive_max_scores: usize,
    tag: &str,
) {
    let prefix = device_prefix(dev);
    for &dtype in dtypes {
        for (kind, fused) in [("fused_attn", true), ("naive", false)] {
            let name = format!("{prefix}_{kind}{tag}_{}", dtype_name(dtype));
            let mut group = c.benchmark_group(&name);
            for s in shapes {
                if (!fused && s.b * s.h * s.sq * s.sk > naive_max_scores) || !selected(&format!("{name}/{}", s.label()))
                {
                    continue;
                }
                let (q, k, v) = inputs(s, dev, dtype).expect("bench inputs");
                let params = AttnParams::new(1.0 / (s.d as f32).sqrt()).causal(s.causal);
                let run = || if fused { attention(&q, &k, &v, &params) } else { attention_ref(&q, &k, &v, &params) };
                // One untimed call also gives the per-iteration time that sizes the group.
                let t0 = Instant::now();
                black_box(run().expect("attention"));
                dev.synchronize().expect("sync");
                let once = t0.elapsed();
                // Criterion's minimum is 10 samples; keep slow rows to about 10 s each.
                group.sample_size(if once > Duration::from_millis(100) { 10 } else { 30 });
                group.warm_up_time(Duration::from_secs(1));
                group.measurement_time((once * 12).clamp(Duration::from_secs(2), Duration::from_secs(20)));
                group.throughput(Throughput::Elements(s.flops()));
                group.bench_function(BenchmarkId::from_parameter(s.label()), |bencher| {
                    bencher.iter_custom(|iters| rep_times(dev, iters, &run).expect("timed reps"))
                });
            }
            group.finish();
        }
    }
}

/// The time of `iters` reps of `run` on `dev`: the wall clock around them on the CPU (the
/// device synchronized first and last), [`cuda_rep_times`] on CUDA.
fn rep_times(
    dev: &Device,
    iters: u64,
    run: &impl Fn() -> candle_core::Result<Tensor>,
) -> candle_core::Result<Duration> {
    match dev {
        #[cfg(feature = "cuda")]
        Device::Cuda(cuda) => cuda_rep_times(cuda, iters, run),
        _ => {
            dev.synchronize()?;
            let start = Instant::now();
            for _ in 0..iters {
                black_box(run()?);
            }
            dev.synchronize()?;
            Ok(start.elapsed())
        }
    }
}

/// The summed time of `iters` reps of `run` on candle's stream, timed as do_bench times torch
/// (benches/common/do_bench.rs).
#[cfg(feature = "cuda")]
fn cuda_rep_times(
    dev: &candle_core::CudaDevice,
    iters: u64,
    run: &impl Fn() -> candle_core::Result<Tensor>,
) -> candle_core::Result<Duration> {
    let ms: f64 = do_bench::cuda_rep_ms(dev, iters as usize, run)?.iter().sum();
    Ok(Duration::from_secs_f64(ms / 1e3))
}

#[cfg(feature = "cuda")]
#[path = "common/do_bench.rs"]
mod do_bench;

/// Whether criterion will run the benchmark `id` (`group/function`) under this process's
/// filter (the command line's positional argument, a regex; `--exact`: the whole id), so that
/// the untimed sizing call of each shape (and the naive rows' f32 scores) runs only for the
/// rows a filtered run times: before, `-- cuda_fused_attn_fa3_bf16` paid a sizing call of
/// every other row, naive ones included, and ncu's `--launch-skip` counted their launches.
/// Criterion skips whatever this keeps that it would not; an unreadable filter keeps all.
fn selected(id: &str) -> bool {
    use std::sync::OnceLock;
    // criterion 0.5's options that take a value (`--name value`; `--name=value` is one arg).
    const VALUED: &[&str] = &[
        "--save-baseline",
        "-s",
        "--baseline",
        "-b",
        "--baseline-lenient",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--profile-time",
        "--output-format",
        "--color",
        "-c",
        "--format",
        "--plotting-backend",
        "--logfile",
    ];
    static FILTER: OnceLock<(Option<regex::Regex>, Option<String>)> = OnceLock::new();
    let (re, exact) = FILTER.get_or_init(|| {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let exact_flag = args.iter().any(|a| a == "--exact");
        let mut filter = None;
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if VALUED.contains(&a.as_str()) {
                i += 2;
                continue;
            }
            if !a.starts_with('-') && filter.is_none() {
                filter = Some(a.clone());
            }
            i += 1;
        }
        match filter {
            Some(f) if exact_flag => (None, Some(f)),
            Some(f) => (regex::Regex::new(&f).ok(), None),
            None => (None, None),
        }
    });
    match (re, exact) {
        (_, Some(e)) => id == e,
        (Some(r), None) => r.is_match(id),
        (None, None) => true,
    }
}

/// Random q, k, v of the shape in `dtype` on `dev` (normal, std 1).
fn inputs(s: &Shape, dev: &Device, dtype: DType) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    let randn = |seq: usize, heads: usize| Tensor::randn(0f32, 1.0, (s.b, seq, heads, s.d), dev)?.to_dtype(dtype);
    Ok((randn(s.sq, s.h)?, randn(s.sk, s.hkv)?, randn(s.sk, s.hkv)?))
}

/// The training rows: `(B,H,S,D)`, causal and not (bf16 on CUDA).
#[cfg(feature = "cuda")]
const CUDA_BWD_SHAPES: &[Shape] = &[
    shape((16, 16, 16, 2048, 2048, 64), false),
    shape((16, 16, 16, 2048, 2048, 64), true),
    shape((16, 16, 16, 2048, 2048, 128), false),
    shape((16, 16, 16, 2048, 2048, 128), true),
    shape((4, 32, 32, 4096, 4096, 128), false),
    shape((4, 32, 32, 4096, 4096, 128), true),
    shape((1, 32, 32, 16384, 16384, 128), false),
    shape((1, 32, 32, 16384, 16384, 128), true),
    shape((4, 9, 9, 2048, 2048, 64), false),
    shape((4, 9, 9, 2048, 2048, 64), true),
];
const CPU_BWD_SHAPES: &[Shape] = &[shape((1, 8, 8, 512, 512, 64), false), shape((1, 16, 16, 2048, 2048, 64), false)];

/// Training benches. `{device}_bwd_{kind}_{dtype}` times the backward alone: for `fused`,
/// `attention_backward` from the forward's output and LSE (what PyTorch's
/// `out.backward(G)` runs, as scripts/bench_torch_bwd.py times it); for `naive`,
/// `loss.backward()` on one forward's graph with `loss = Σ out ∘ G`; throughput 2.5 × the
/// forward's FLOPs. `{device}_fwdbwd_{kind}_{dtype}` times forward plus `loss.backward()`
/// through candle's autograd, 3.5 ×, which adds candle's gradient bookkeeping (zeros and an
/// add per tracked tensor, the product's own backward). `kind` is `fused` or `naive`
/// (`attention_ref` under autograd, with candle-nn's differentiable softmax).
fn bench_backward(c: &mut Criterion, dev: &Device, dtype: DType, shapes: &[Shape], naive_max_scores: usize) {
    let prefix = device_prefix(dev);
    for (what, with_fwd) in [("bwd", false), ("fwdbwd", true)] {
        for (kind, fused) in [("fused", true), ("naive", false)] {
            let name = format!("{prefix}_{what}_{kind}_{}", dtype_name(dtype));
            let mut group = c.benchmark_group(&name);
            for s in shapes {
                if (!fused && s.b * s.h * s.sq * s.sk > naive_max_scores) || !selected(&format!("{name}/{}", s.label()))
                {
                    continue;
                }
                let (q, k, v) = inputs(s, dev, dtype).expect("bench inputs");
                let vars = [&q, &k, &v].map(|t| candle_core::Var::from_tensor(t).expect("var"));
                let g =
                    Tensor::randn(0f32, 1.0, (s.b, s.sq, s.h, s.d), dev).and_then(|t| t.to_dtype(dtype)).expect("g");
                let params = AttnParams::new(1.0 / (s.d as f32).sqrt()).causal(s.causal);
                let forward = || -> candle_core::Result<Tensor> {
                    let [q, k, v] = [&vars[0], &vars[1], &vars[2]].map(|x| x.as_tensor());
                    let out = if fused { attention(q, k, v, &params)? } else { attention_ref(q, k, v, &params)? };
                    (out * &g)?.sum_all()
                };
                let loss = forward().expect("forward");
                let [qt, kt, vt] = [&vars[0], &vars[1], &vars[2]].map(|x| x.as_tensor().detach());
                let (out, lse) = attention_with_lse(&qt, &kt, &vt, &params).expect("forward with lse");
                let run = || -> candle_core::Result<Tensor> {
                    if fused && !with_fwd {
                        return Ok(attention_backward(&qt, &kt, &vt, &out, &g, &lse, &params)?.0);
                    }
                    let loss = if with_fwd { forward()? } else { loss.clone() };
                    let grads = loss.backward()?;
                    match grads.get(vars[0].as_tensor()) {
                        Some(dq) => Ok(dq.clone()),
                        None => candle_core::bail!("no gradient for q"),
                    }
                };
                let t0 = Instant::now();
                black_box(run().expect("backward"));
                dev.synchronize().expect("sync");
                let once = t0.elapsed();
                group.sample_size(10);
                group.warm_up_time(Duration::from_secs(1));
                group.measurement_time((once * 12).clamp(Duration::from_secs(2), Duration::from_secs(20)));
                let factor = if with_fwd { 7 } else { 5 }; // 3.5× or 2.5× the forward, in halves
                group.throughput(Throughput::Elements(s.flops() * factor / 2));
                group.bench_function(BenchmarkId::from_parameter(s.label()), |bencher| {
                    bencher.iter_custom(|iters| rep_times(dev, iters, &run).expect("timed reps"))
                });
            }
            group.finish();
        }
    }
}

/// The varlen batch: 8 sequences of 64–2000 tokens (lengths from a fixed seed), h16/hkv4,
/// d64, self-attention (len_q = len_k per sequence); shared with examples/bench_cpu.rs.
#[path = "common/varlen.rs"]
mod varlen;
use varlen::cpu_varlen_lengths;
#[cfg(feature = "cuda")]
use varlen::cuda_varlen_lengths;

/// `cpu_varlen_{what}_{dtype}`: the packed batch through `attention_varlen` (`packed`; and
/// `packed_into`: `attention_varlen_into` into one output buffer allocated before the timing,
/// as a server reuses one) against (a) the
/// same sequences padded to the longest as one dense call, (b) a loop of dense calls, one
/// per sequence (`loop`: eight outputs; `loop_cat`: then concatenated into the packed
/// call's one output), and candle-nn 0.11.1's `flash_attn_varlen_cpu` and
/// `flash_attn_varlen_unfused` (which take per-sequence u32 lengths). Throughput: the
/// packed batch's attention FLOPs.
fn bench_varlen(c: &mut Criterion) {
    use candle_fused_attn::{attention_varlen, attention_varlen_into, Varlen};
    let dev = Device::Cpu;
    let lens = cpu_varlen_lengths();
    let (h, hkv, d) = (16, 4, 64);
    let total: usize = lens.iter().sum();
    let max = *lens.iter().max().unwrap();
    let label = |causal: bool| format!("n8_h{h}_kv{hkv}_d{d}_total{total}{}", if causal { "_causal" } else { "" });
    for dtype in [DType::F32, DType::F16] {
        let q = Tensor::randn(0f32, 1., (total, h, d), &dev).unwrap().to_dtype(dtype).unwrap();
        let k = Tensor::randn(0f32, 1., (total, hkv, d), &dev).unwrap().to_dtype(dtype).unwrap();
        let v = Tensor::randn(0f32, 1., (total, hkv, d), &dev).unwrap().to_dtype(dtype).unwrap();
        let mut cu = vec![0u32];
        for &l in &lens {
            cu.push(cu[cu.len() - 1] + l as u32);
        }
        let cu = Tensor::new(cu, &dev).unwrap();
        let per_seq = Tensor::new(lens.iter().map(|&l| l as u32).collect::<Vec<_>>(), &dev).unwrap();
        let varlen = Varlen::new(&cu, &cu, max, max);
        let mut off = 0;
        let slices: Vec<(Tensor, Tensor, Tensor)> = lens
            .iter()
            .map(|&l| {
                let s = |t: &Tensor| t.narrow(0, off, l).unwrap().unsqueeze(0).unwrap().contiguous().unwrap();
                let r = (s(&q), s(&k), s(&v));
                off += l;
                r
            })
            .collect();
        let pad = |t: &Tensor, heads: usize| {
            let rows: Vec<Tensor> = {
                let mut off = 0;
                lens.iter()
                    .map(|&l| {
                        let x = t.narrow(0, off, l).unwrap();
                        off += l;
                        x.pad_with_zeros(0, 0, max - l).unwrap()
                    })
                    .collect()
            };
            Tensor::stack(&rows, 0).unwrap().reshape((lens.len(), max, heads, d)).unwrap()
        };
        let (qp, kp, vp) = (pad(&q, h), pad(&k, hkv), pad(&v, hkv));
        let out = Tensor::zeros(q.shape(), dtype, &dev).unwrap();
        for causal in [false, true] {
            let scale = 1.0 / (d as f32).sqrt();
            let params = AttnParams::new(scale).causal(causal);
            let flops: usize = lens.iter().map(|&l| 4 * h * l * l * d / if causal { 2 } else { 1 }).sum();
            type Run<'a> = Box<dyn Fn() -> candle_core::Result<Tensor> + 'a>;
            let mut runs: Vec<(&str, Run)> = vec![
                ("packed", Box::new(|| attention_varlen(&q, &k, &v, &varlen, &params))),
                (
                    "packed_into",
                    Box::new(|| attention_varlen_into(&out, &q, &k, &v, &varlen, &params).map(|()| out.clone())),
                ),
                ("padded", Box::new(|| attention(&qp, &kp, &vp, &params))),
                (
                    "loop",
                    Box::new(|| {
                        let outs = slices
                            .iter()
                            .map(|(q, k, v)| attention(q, k, v, &params))
                            .collect::<candle_core::Result<Vec<_>>>()?;
                        Ok(outs.into_iter().next().unwrap())
                    }),
                ),
                (
                    // The loop, then the one `(total, h, d)` output the packed call returns.
                    "loop_cat",
                    Box::new(|| {
                        let outs = slices
                            .iter()
                            .map(|(q, k, v)| attention(q, k, v, &params)?.squeeze(0))
                            .collect::<candle_core::Result<Vec<_>>>()?;
                        Tensor::cat(&outs, 0)
                    }),
                ),
                (
                    "candle_flash_cpu",
                    Box::new(|| {
                        candle_nn::attention::flash_attn_varlen_cpu(
                            &q, &k, &v, None, &per_seq, &per_seq, max, max, scale, causal, None, None,
                        )
                    }),
                ),
                (
                    "candle_unfused",
                    Box::new(|| {
                        candle_nn::attention::flash_attn_varlen_unfused(
                            &q, &k, &v, None, &per_seq, &per_seq, max, max, scale, causal, None, None,
                        )
                    }),
                ),
            ];
            for (what, run) in runs.drain(..) {
                let mut group = c.benchmark_group(format!("cpu_varlen_{what}_{}", dtype_name(dtype)));
                // No untimed call here: it would run even when a filter skips the row.
                // Criterion stretches the measurement time as the 10 samples need.
                group.sample_size(10);
                group.warm_up_time(Duration::from_millis(500));
                group.measurement_time(Duration::from_secs(3));
                group.throughput(Throughput::Elements(flops as u64));
                group.bench_function(BenchmarkId::from_parameter(label(causal)), |bencher| {
                    bencher.iter_custom(|iters| rep_times(&dev, iters, &run).expect("timed reps"))
                });
                group.finish();
            }
        }
    }
}

/// `cuda_varlen_bf16`: a packed batch of 64 sequences (100–4000 tokens, LLaMA-3-8B heads: 32 q,
/// 8 kv, d128), causal and not: ours packed, and the same work as one padded dense call
/// (batch 64 × the longest length), and ours with K/V in a paged cache (pages of 16 and 256
/// keys, host indices). Throughput: the packed batch's FLOPs on the FA
/// convention, Σ 4·len²·H·D per sequence (halved for causal), for both rows.
/// `cuda_paged_decode_bf16`: one query per sequence against its cache, contiguous (dense
/// decode), packed on the same K/V (unpaged), and paged (pages 16 and 256, shuffled block
/// tables, and the same pools with the pages in order); throughput in bytes of K+V.
/// Packed rows run twice: `hostidx` with the index tensors (cumulative lengths, block table)
/// on the CPU, as a server builds them, and `devidx` with them on the GPU, where validation
/// reads them back (a device-to-host copy per call: on candle's default device it waits for
/// everything queued on the stream); the paged decode's `devidx_ownstream` rows run the
/// devidx row on a device of its own stream (`Device::new_cuda_with_stream`), where the read
/// runs on a side stream that waits only for the indices' writer (src/cuda/indices.rs). On
/// candle's default device, repeated index values are guessed (src/cuda/speculation.rs), which
/// the `devidx` rows (the same values every call) always do; `devidx_steps32` changes them
/// every 32 calls, as a 32-layer model's decode steps do.
#[cfg(feature = "cuda")]
fn bench_cuda_varlen(c: &mut Criterion, dev: &Device) -> candle_core::Result<()> {
    let dtype = DType::BF16;
    let (h, hkv, d) = (32, 8, 128);
    let lens = cuda_varlen_lengths();
    let total: usize = lens.iter().sum();
    let max = *lens.iter().max().unwrap_or(&1);
    let cu: Vec<u32> = std::iter::once(0)
        .chain(lens.iter().scan(0u32, |a, &l| {
            *a += l as u32;
            Some(*a)
        }))
        .collect();
    // The index tensors on the host (how a server builds them: validated without a device
    // sync) and on the GPU (read back for validation: one device-to-host copy per call).
    let cu_host = Tensor::new(cu.as_slice(), &Device::Cpu)?;
    let cu = Tensor::new(cu.as_slice(), dev)?;
    let randn = |shape: &[usize]| Tensor::randn(0f32, 1.0, shape, dev)?.to_dtype(dtype);
    let (q, k, v) = (randn(&[total, h, d])?, randn(&[total, hkv, d])?, randn(&[total, hkv, d])?);
    let (qp, kp, vp) = (randn(&[64, max, h, d])?, randn(&[64, max, hkv, d])?, randn(&[64, max, hkv, d])?);
    let varlen = Varlen::new(&cu, &cu, max, max);
    let varlen_host = Varlen::new(&cu_host, &cu_host, max, max);
    let mut group = c.benchmark_group("cuda_varlen_bf16");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for causal in [false, true] {
        let params = AttnParams::new(1.0 / (d as f32).sqrt()).causal(causal);
        let flops: usize = lens.iter().map(|&l| 4 * l * l * h * d / if causal { 2 } else { 1 }).sum();
        group.throughput(Throughput::Elements(flops as u64));
        let tag = if causal { "_causal" } else { "" };
        let ours = || attention_varlen(&q, &k, &v, &varlen_host, &params);
        group.bench_function(format!("ours_hostidx_64seq_h32_kv8_d128{tag}"), |b| {
            b.iter_custom(|iters| rep_times(dev, iters, &ours).expect("timed reps"))
        });
        let ours_dev = || attention_varlen(&q, &k, &v, &varlen, &params);
        group.bench_function(format!("ours_devidx_64seq_h32_kv8_d128{tag}"), |b| {
            b.iter_custom(|iters| rep_times(dev, iters, &ours_dev).expect("timed reps"))
        });
        let padded = || attention(&qp, &kp, &vp, &params);
        group.bench_function(format!("padded_dense_64x{max}_h32_kv8_d128{tag}"), |b| {
            b.iter_custom(|iters| rep_times(dev, iters, &padded).expect("timed reps"))
        });
        // The same batch with K/V in a paged cache (host indices): pages of 16 and 256 keys, a
        // fixed shuffle of the pool, as a serving engine's chunked prefill reads it.
        for page in [16usize, 256] {
            let used: Vec<usize> = lens.iter().map(|l| l.div_ceil(page)).collect();
            let (pool, max_blocks) = (used.iter().sum::<usize>(), *used.iter().max().unwrap_or(&1));
            let mut table = vec![0u32; lens.len() * max_blocks];
            let mut next = 0usize;
            for (b, &u) in used.iter().enumerate() {
                for j in 0..u {
                    // Multiplication by an odd number modulo the pool: a fixed shuffle when the
                    // pool is a power of two, a spread of block ids otherwise.
                    table[b * max_blocks + j] = ((next * 2654435761usize) % pool) as u32;
                    next += 1;
                }
            }
            let table = Tensor::from_vec(table, (lens.len(), max_blocks), &Device::Cpu)?;
            let (kpg, vpg) = (randn(&[pool, page, hkv, d])?, randn(&[pool, page, hkv, d])?);
            let vl = Varlen::new(&cu_host, &cu_host, max, max).paged(&table, page);
            let paged = || attention_varlen(&q, &kpg, &vpg, &vl, &params);
            group.bench_function(format!("ours_paged{page}_hostidx_64seq_h32_kv8_d128{tag}"), |b| {
                b.iter_custom(|iters| rep_times(dev, iters, &paged).expect("timed reps"))
            });
        }
    }
    group.finish();

    // A device of its own stream (`Device::new_cuda_with_stream`, cudarc's multi-stream mode):
    // there GPU-resident index tensors are read on a side stream that waits only for their
    // writer (src/cuda/indices.rs), where candle's default device drains its stream.
    let own = Device::new_cuda_with_stream(0)?;
    let mut group = c.benchmark_group("cuda_paged_decode_bf16");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2));
    for (b, sk) in [(8usize, 8192usize), (32, 4096)] {
        let params = AttnParams::new(1.0 / (d as f32).sqrt());
        group.throughput(Throughput::Bytes((b * sk * hkv * d * 2 * 2) as u64));
        let q = randn(&[b, 1, h, d])?;
        let (kd, vd) = (randn(&[b, sk, hkv, d])?, randn(&[b, sk, hkv, d])?);
        let dense = || attention(&q, &kd, &vd, &params);
        group.bench_function(format!("contiguous_b{b}_h32_kv8_q1_k{sk}_d128"), |bb| {
            bb.iter_custom(|iters| rep_times(dev, iters, &dense).expect("timed reps"))
        });
        let cu_q: Vec<u32> = (0..=b as u32).collect();
        let cu_k: Vec<u32> = (0..=b as u32).map(|i| i * sk as u32).collect();
        let qv = q.reshape((b, h, d))?;
        // The packed kernel on the contiguous row's own K/V (unpaged, host indices): the
        // packed entry's cost apart from the pages.
        {
            let (cu_q, cu_k) =
                (Tensor::new(cu_q.as_slice(), &Device::Cpu)?, Tensor::new(cu_k.as_slice(), &Device::Cpu)?);
            let (kv, vv) = (kd.reshape((b * sk, hkv, d))?, vd.reshape((b * sk, hkv, d))?);
            let vl = Varlen::new(&cu_q, &cu_k, 1, sk);
            let packed = || attention_varlen(&qv, &kv, &vv, &vl, &params);
            group.bench_function(format!("packed_hostidx_b{b}_h32_kv8_q1_k{sk}_d128"), |bb| {
                bb.iter_custom(|iters| rep_times(dev, iters, &packed).expect("timed reps"))
            });
        }
        for page in [16usize, 256] {
            let blocks = b * sk / page;
            // A fixed shuffle of the blocks (multiplication by an odd number modulo a power of 2).
            let table: Vec<u32> = (0..blocks).map(|i| ((i * 2654435761usize) % blocks) as u32).collect();
            let (kpg, vpg) = (randn(&[blocks, page, hkv, d])?, randn(&[blocks, page, hkv, d])?);
            // Index tensors on the host, then on the GPU (see the varlen group), then the GPU
            // row again with everything on the device of its own stream.
            let on_own = (qv.to_device(&own)?, kpg.to_device(&own)?, vpg.to_device(&own)?);
            let rows = [
                ("hostidx", &Device::Cpu, dev, (&qv, &kpg, &vpg)),
                ("devidx", dev, dev, (&qv, &kpg, &vpg)),
                ("devidx_ownstream", &own, &own, (&on_own.0, &on_own.1, &on_own.2)),
            ];
            for (idx, idx_dev, run_dev, (qr, kr, vr)) in rows {
                let cu_q = Tensor::new(cu_q.as_slice(), idx_dev)?;
                let cu_k = Tensor::new(cu_k.as_slice(), idx_dev)?;
                let table = Tensor::from_vec(table.clone(), (b, sk / page), idx_dev)?;
                let vl = Varlen::new(&cu_q, &cu_k, 1, sk).paged(&table, page);
                let paged = || attention_varlen(qr, kr, vr, &vl, &params);
                group.bench_function(format!("paged{page}_{idx}_b{b}_h32_kv8_q1_k{sk}_d128"), |bb| {
                    bb.iter_custom(|iters| rep_times(run_dev, iters, &paged).expect("timed reps"))
                });
            }
            // GPU indices on candle's default device as a model's decode steps pass them: the
            // same values for 32 calls (the layers of one step), then new ones (another shuffle),
            // so that the call guessing the last values (src/cuda/speculation.rs) is wrong once
            // and reads once per 32 calls.
            {
                let other: Vec<u32> = (0..blocks).map(|i| ((i * 40503usize + 17) % blocks) as u32).collect();
                let (cu_q, cu_k) = (Tensor::new(cu_q.as_slice(), dev)?, Tensor::new(cu_k.as_slice(), dev)?);
                let vls = [
                    Varlen::new(&cu_q, &cu_k, 1, sk)
                        .paged(&Tensor::from_vec(table.clone(), (b, sk / page), dev)?, page),
                    Varlen::new(&cu_q, &cu_k, 1, sk).paged(&Tensor::from_vec(other, (b, sk / page), dev)?, page),
                ];
                let call = std::cell::Cell::new(0usize);
                let steps = || {
                    let i = call.get();
                    call.set(i + 1);
                    attention_varlen(&qv, &kpg, &vpg, &vls[(i / 32) % 2], &params)
                };
                group.bench_function(format!("paged{page}_devidx_steps32_b{b}_h32_kv8_q1_k{sk}_d128"), |bb| {
                    bb.iter_custom(|iters| rep_times(dev, iters, &steps).expect("timed reps"))
                });
            }
            // The same pool with the pages in order (block j of sequence i is i · pages + j):
            // what the pages' placement costs apart from the paged address path.
            let (cu_q, cu_k) =
                (Tensor::new(cu_q.as_slice(), &Device::Cpu)?, Tensor::new(cu_k.as_slice(), &Device::Cpu)?);
            let ident = Tensor::from_vec((0..blocks as u32).collect::<Vec<_>>(), (b, sk / page), &Device::Cpu)?;
            let vl = Varlen::new(&cu_q, &cu_k, 1, sk).paged(&ident, page);
            let paged = || attention_varlen(&qv, &kpg, &vpg, &vl, &params);
            group.bench_function(format!("paged{page}_inorder_hostidx_b{b}_h32_kv8_q1_k{sk}_d128"), |bb| {
                bb.iter_custom(|iters| rep_times(dev, iters, &paged).expect("timed reps"))
            });
        }
    }
    group.finish();
    Ok(())
}

/// `cuda_decode_layout_bf16`: the decode bench rows twice, `bshd` with K/V made `(B, S, Hkv,
/// D)` as in `cuda_fused_attn_bf16` (a key row of one head every Hkv·D·2 bytes), `bhsd` with
/// them made `(B, Hkv, S, D)` as PyTorch's SDPA takes them (scripts/bench_torch.py) and as a
/// KV cache grown along dim 2 holds them (candle-transformers' `Cache`), passed as
/// `transpose(1, 2)` views (no copy): each kv head's keys one contiguous run.
#[cfg(feature = "cuda")]
fn bench_cuda_decode_layout(c: &mut Criterion, dev: &Device) -> candle_core::Result<()> {
    let dtype = DType::BF16;
    let (h, hkv, d) = (32, 8, 128);
    let randn = |shape: &[usize]| Tensor::randn(0f32, 1.0, shape, dev)?.to_dtype(dtype);
    let mut group = c.benchmark_group("cuda_decode_layout_bf16");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2));
    for (b, sq, sk) in [(8usize, 1usize, 8192usize), (1, 1, 32768), (1, 1, 2048), (32, 1, 4096), (1, 4, 8192)] {
        let params = AttnParams::new(1.0 / (d as f32).sqrt());
        group.throughput(Throughput::Bytes((b * sk * hkv * d * 2 * 2) as u64));
        let q = randn(&[b, sq, h, d])?;
        let (kb, vb) = (randn(&[b, sk, hkv, d])?, randn(&[b, sk, hkv, d])?);
        let (kh, vh) = (randn(&[b, hkv, sk, d])?.transpose(1, 2)?, randn(&[b, hkv, sk, d])?.transpose(1, 2)?);
        for (tag, k, v) in [("bshd", &kb, &vb), ("bhsd", &kh, &vh)] {
            let run = || attention(&q, k, v, &params);
            group.bench_function(format!("{tag}_b{b}_h32_kv8_q{sq}_k{sk}_d128"), |bb| {
                bb.iter_custom(|iters| rep_times(dev, iters, &run).expect("timed reps"))
            });
        }
    }
    group.finish();
    Ok(())
}

fn benches(c: &mut Criterion) {
    // FUSED_ATTN_BENCH_CUDA_ONLY=1: no CPU group (their untimed first calls run whatever the
    // filter, some seconds per bench run: the GPU machine's A/B loops set it).
    if std::env::var("FUSED_ATTN_BENCH_CUDA_ONLY").as_deref() != Ok("1") {
        bench_varlen(c);
        // The naive path needs B·H·Sq·Sk f32 scores plus copies; all CPU rows fit in 24 GiB.
        bench_device(c, &Device::Cpu, &[DType::F32, DType::BF16], CPU_SHAPES, 1 << 27);
        bench_backward(c, &Device::Cpu, DType::F32, CPU_BWD_SHAPES, 1 << 27);
    }
    #[cfg(feature = "cuda")]
    match Device::new_cuda(0) {
        // The naive (16,16,16,2048,2048) row needs 4 GiB of scores; the 16k row would need 32 GiB.
        Ok(dev) => {
            // FUSED_ATTN_BENCH_EVENT_TRACKING=off: tensors made from here on carry no cudarc
            // use events (candle's device runs its own stream, which puts cudarc in
            // multi-stream mode: each device pointer taken waits on the buffer's last write
            // event and records a use event). A diagnostic switch, to measure what those
            // stream operations add to a call.
            if std::env::var("FUSED_ATTN_BENCH_EVENT_TRACKING").as_deref() == Ok("off") {
                if let Device::Cuda(cuda) = &dev {
                    // SAFETY: the bench runs every tensor of this device on its one stream, so
                    // no use needs an event to order it against another stream.
                    unsafe { cuda.disable_event_tracking() };
                    eprintln!("cuda event tracking off");
                }
            }
            bench_device(c, &dev, &[DType::BF16], CUDA_SHAPES, 1 << 30);
            bench_device_tagged(c, &dev, &[DType::BF16], HEAD_DIM_SHAPES, 1 << 30, "_hd");
            bench_device_tagged(c, &dev, &[DType::BF16], FA3_SHAPES, 1 << 30, "_fa3");
            bench_cuda_varlen(c, &dev).expect("varlen benches");
            bench_cuda_decode_layout(c, &dev).expect("decode layout benches");
            // Naive autograd keeps several f32 copies of the scores: bound it lower.
            bench_backward(c, &dev, DType::BF16, CUDA_BWD_SHAPES, 1 << 28);
        }
        Err(e) => eprintln!("no CUDA device, cuda groups skipped: {e}"),
    }
}

criterion_group!(attention_benches, benches);
criterion_main!(attention_benches);
