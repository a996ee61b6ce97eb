//! Times the CPU forward on the rows of the CPU bench table (issue 15's rows), for
//! `scripts/bench_torch_cpu.py`, which runs this binary and PyTorch's CPU SDPA in one run
//! on the same cores and thread count; it also runs alone.
//!
//! ```text
//! RAYON_NUM_THREADS=2 taskset -c 0,1 bench_cpu [--row R] [--dtype f32|bf16|f16] [--path P] [--reps N] [--softcap C]
//! ```
//!
//! `bench_cpu --peaks` instead prints the issue rates of this core (one thread, call it
//! pinned): the f32 FMA (`vfmadd231ps` zmm) and, where the CPU has AVX512-BF16, the bf16
//! pair dot product (`vdpbf16ps` zmm), as GFLOP/s from 24 independent accumulators; the
//! ceilings of the `avx512-kernels` and `avx512-bf16` tile products.
//!
//! `bench_cpu --varlen` instead times issue 13's packed CPU batch (the 8 sequences of
//! 64–2000 tokens of the `cpu_varlen` criterion groups, h16/hkv4, d64, causal and not)
//! against a loop of dense calls, one per sequence, that drops each sequence's output before
//! the next call (`loop`: the next output then reuses the freed, cache-warm memory), the same
//! loop keeping its outputs until the end, as a caller that uses them does (`loop_kept`), the
//! same sequences padded into one dense call, the loop followed by the `Tensor::cat` that
//! gives the packed call's one `(total, h, d)` output (`loop_cat`), and the packed call into
//! one output buffer allocated once before the timing and reused by every call
//! (`packed_into`, `attention_varlen_into`), interleaved call by call (packed, loop,
//! loop_kept, padded, loop_cat, packed_into, packed, …) so that
//! a drift of the machine's load falls on all alike. It prints
//! each one's median ms and minor page faults per call, and the median of the per-round
//! ratios of each to packed (`over_packed`) and to packed_into (`over_packed_into`).
//! `--only packed,loop,…` runs those of them (one for a profiler; no ratios then but its
//! own), `--mask causal|none` one mask, `--lens L1,L2,…` other sequence lengths.
//!
//! `--row` is one of the rows below as `B,H,Hkv,Sq,Sk,D[,causal]` (default: all of them),
//! `--path` forces a CPU path (`FUSED_ATTN_CPU_PATH` names), `--reps` the timed calls per
//! row after 3 warm-ups (default: as many as fit in about 2 s, 5 to 200). Prints one JSON
//! object per (row, dtype) line: the median and every time in ms, GFLOP/s (4·B·H·Sq·Sk·D,
//! halved for causal), the median and least CPU time per call over all threads
//! (`/proc/self/task/*/schedstat`), the path the call took and the thread count.

use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_fused_attn::{attention, with_cpu_path, AttnParams, CpuPath};

/// (B, H, Hkv, Sq, Sk, D, causal).
type Row = (usize, usize, usize, usize, usize, usize, bool);

const ROWS: [Row; 4] = [
    (1, 8, 8, 512, 512, 64, false),
    (1, 16, 16, 2048, 2048, 64, false),
    (1, 16, 16, 2048, 2048, 64, true),
    (1, 32, 8, 1, 4096, 128, false),
];

fn parse_row(s: &str) -> Row {
    let f: Vec<&str> = s.split(',').map(str::trim).collect();
    let n = |i: usize| f[i].parse::<usize>().unwrap_or_else(|_| panic!("bad row {s:?}"));
    assert!(f.len() == 6 || f.len() == 7, "a row is B,H,Hkv,Sq,Sk,D[,causal]: {s:?}");
    (n(0), n(1), n(2), n(3), n(4), n(5), f.get(6).is_some_and(|c| *c == "causal" || *c == "1" || *c == "true"))
}

fn main() -> candle_core::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--peaks") {
        peaks();
        return Ok(());
    }
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    if args.iter().any(|a| a == "--varlen") {
        let reps = opt("--reps").map_or(15, |r| r.parse().expect("--reps N"));
        let masks = match opt("--mask").as_deref() {
            None => vec![false, true],
            Some("causal") => vec![true],
            Some("none") => vec![false],
            Some(m) => panic!("--mask causal|none, got {m}"),
        };
        let lens = opt("--lens").map_or_else(varlen_lengths, |l| {
            l.split(',').map(|x| x.trim().parse().expect("--lens L1,L2,...")).collect()
        });
        return varlen_ab(opt("--dtype").as_deref().unwrap_or("f32"), reps, opt("--only"), &masks, lens);
    }
    let rows: Vec<Row> = opt("--row").map_or(ROWS.to_vec(), |r| vec![parse_row(&r)]);
    let dtypes: Vec<DType> = match opt("--dtype").as_deref() {
        None => vec![DType::F32, DType::BF16],
        Some("f32") => vec![DType::F32],
        Some("bf16") => vec![DType::BF16],
        Some("f16") => vec![DType::F16],
        Some(o) => panic!("unknown dtype {o}"),
    };
    let path: Option<CpuPath> = opt("--path").map(|p| p.parse()).transpose()?;
    let reps: Option<usize> = opt("--reps").map(|r| r.parse().expect("--reps N"));
    let softcap: Option<f32> = opt("--softcap").map(|c| c.parse().expect("--softcap C"));
    let threads = rayon::current_num_threads();
    for &(b, h, hkv, sq, sk, d, causal) in &rows {
        for &dtype in &dtypes {
            let dev = Device::Cpu;
            let q = Tensor::randn(0f32, 1.0, (b, sq, h, d), &dev)?.to_dtype(dtype)?;
            let k = Tensor::randn(0f32, 1.0, (b, sk, hkv, d), &dev)?.to_dtype(dtype)?;
            let v = Tensor::randn(0f32, 1.0, (b, sk, hkv, d), &dev)?.to_dtype(dtype)?;
            let mut p = AttnParams::new(1.0 / (d as f32).sqrt()).causal(causal);
            if let Some(c) = softcap {
                p = p.softcap(c);
            }
            let call = || -> candle_core::Result<Tensor> {
                match path {
                    Some(path) => with_cpu_path(path, || attention(&q, &k, &v, &p))?,
                    None => attention(&q, &k, &v, &p),
                }
            };
            let mut cpu = Vec::new();
            let mut time = || -> candle_core::Result<f64> {
                let (t, c) = (Instant::now(), process_cpu_ns());
                std::hint::black_box(call()?);
                cpu.push((process_cpu_ns() - c) as f64 / 1e6);
                Ok(t.elapsed().as_secs_f64() * 1e3)
            };
            for _ in 0..3 {
                time()?;
            }
            let n = match reps {
                Some(n) => n,
                None => ((2000.0 / time()?) as usize).clamp(5, 200),
            };
            let mut ms: Vec<f64> = (0..n).map(|_| time()).collect::<candle_core::Result<_>>()?;
            ms.sort_by(f64::total_cmp);
            let median = ms[ms.len() / 2];
            let mut cpu = cpu[cpu.len() - n..].to_vec();
            cpu.sort_by(f64::total_cmp);
            let (cpu_median, cpu_min) = (cpu[cpu.len() / 2], cpu[0]);
            let flops = 4.0 * (b * h * sq * sk * d) as f64 * if causal { 0.5 } else { 1.0 };
            let ms_list: Vec<String> = ms.iter().map(|t| format!("{t:.4}")).collect();
            println!(
                "{{\"row\": [{b}, {h}, {hkv}, {sq}, {sk}, {d}], \"causal\": {causal}, \"softcap\": {}, \"dtype\": \"{}\", \
                 \"path\": \"{}\", \"threads\": {threads}, \"median_ms\": {median:.4}, \"gflops\": {:.1}, \"cpu_median_ms\": {cpu_median:.4}, \"cpu_min_ms\": {cpu_min:.4}, \"ms\": [{}]}}",
                softcap.map_or("null".to_string(), |c| c.to_string()),
                format!("{dtype:?}").to_lowercase(),
                path.map_or("auto".to_string(), |p| p.to_string()),
                flops / median / 1e6,
                ms_list.join(", ")
            );
        }
    }
    Ok(())
}

/// The sequence lengths of the `cpu_varlen` criterion groups, from benches/common/varlen.rs.
#[path = "../benches/common/varlen.rs"]
mod varlen;
use varlen::cpu_varlen_lengths as varlen_lengths;

/// This process's minor page faults so far (field 10 of `/proc/self/stat`; 0 where that is
/// unreadable).
fn minor_faults() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else { return 0 };
    // The fields after the command name, which is in parentheses and may hold spaces.
    s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(7)?.parse().ok()).unwrap_or(0)
}

/// `--varlen`: the packed batch against the loop of dense calls and the padded call,
/// interleaved; one JSON line per (mask, run).
fn varlen_ab(
    dtype: &str,
    reps: usize,
    only: Option<String>,
    masks: &[bool],
    lens: Vec<usize>,
) -> candle_core::Result<()> {
    use candle_fused_attn::{attention_varlen, attention_varlen_into, Varlen};
    let dtype = match dtype {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        o => panic!("unknown dtype {o}"),
    };
    let dev = Device::Cpu;
    let (h, hkv, d) = (16, 4, 64);
    let total: usize = lens.iter().sum();
    let max = *lens.iter().max().unwrap_or(&1);
    let q = Tensor::randn(0f32, 1., (total, h, d), &dev)?.to_dtype(dtype)?;
    let k = Tensor::randn(0f32, 1., (total, hkv, d), &dev)?.to_dtype(dtype)?;
    let v = Tensor::randn(0f32, 1., (total, hkv, d), &dev)?.to_dtype(dtype)?;
    let cu: Vec<u32> = std::iter::once(0u32)
        .chain(lens.iter().scan(0u32, |a, &l| {
            *a += l as u32;
            Some(*a)
        }))
        .collect();
    let cu = Tensor::new(cu, &dev)?;
    let varlen = Varlen::new(&cu, &cu, max, max);
    let mut slices = Vec::new();
    let (mut qp, mut kp, mut vp) = (Vec::new(), Vec::new(), Vec::new());
    let mut off = 0;
    for &l in &lens {
        let s = |t: &Tensor| t.narrow(0, off, l)?.unsqueeze(0)?.contiguous();
        slices.push((s(&q)?, s(&k)?, s(&v)?));
        let p = |t: &Tensor| t.narrow(0, off, l)?.pad_with_zeros(0, 0, max - l);
        qp.push(p(&q)?);
        kp.push(p(&k)?);
        vp.push(p(&v)?);
        off += l;
    }
    let (qp, kp, vp) = (Tensor::stack(&qp, 0)?, Tensor::stack(&kp, 0)?, Tensor::stack(&vp, 0)?);
    // `packed_into`'s output, allocated once: a server's reused buffer.
    let out = Tensor::zeros(q.shape(), dtype, &dev)?;
    let threads = rayon::current_num_threads();
    for &causal in masks {
        let params = AttnParams::new(1.0 / (d as f32).sqrt()).causal(causal);
        type Run<'a> = Box<dyn Fn() -> candle_core::Result<()> + 'a>;
        let runs: [(&str, Run<'_>); 6] = [
            ("packed", Box::new(|| attention_varlen(&q, &k, &v, &varlen, &params).map(drop))),
            (
                "loop",
                Box::new(|| {
                    for (q, k, v) in &slices {
                        std::hint::black_box(attention(q, k, v, &params)?);
                    }
                    Ok(())
                }),
            ),
            (
                "loop_kept",
                Box::new(|| {
                    let outs: Vec<Tensor> = slices
                        .iter()
                        .map(|(q, k, v)| attention(q, k, v, &params))
                        .collect::<candle_core::Result<_>>()?;
                    std::hint::black_box(&outs);
                    Ok(())
                }),
            ),
            ("padded", Box::new(|| attention(&qp, &kp, &vp, &params).map(drop))),
            (
                "loop_cat",
                Box::new(|| {
                    let outs: Vec<Tensor> = slices
                        .iter()
                        .map(|(q, k, v)| attention(q, k, v, &params)?.squeeze(0))
                        .collect::<candle_core::Result<_>>()?;
                    Tensor::cat(&outs, 0).map(drop)
                }),
            ),
            ("packed_into", Box::new(|| attention_varlen_into(&out, &q, &k, &v, &varlen, &params))),
        ];
        let mut ms = vec![Vec::new(); runs.len()];
        let mut faults = vec![Vec::new(); runs.len()];
        for rep in 0..reps + 2 {
            for (i, (what, run)) in runs.iter().enumerate() {
                if only.as_deref().is_some_and(|o| !o.split(',').any(|o| o == *what)) {
                    continue;
                }
                let (t, f) = (Instant::now(), minor_faults());
                run()?;
                let (dt, df) = (t.elapsed().as_secs_f64() * 1e3, minor_faults() - f);
                // The first two rounds warm the pools and the page cache, untimed.
                if rep >= 2 {
                    ms[i].push(dt);
                    faults[i].push(df as f64);
                }
            }
        }
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        // The median of the per-round ratios of run `i` to run `base` (where both ran).
        let ratio = |i: usize, base: usize| match ms[base].is_empty() || ms[i].is_empty() {
            true => "null".to_string(),
            false => format!("{:.4}", median(&ms[i].iter().zip(&ms[base]).map(|(a, p)| a / p).collect::<Vec<_>>())),
        };
        let into = runs.iter().position(|(w, _)| *w == "packed_into").expect("a packed_into run");
        let flops: usize = lens.iter().map(|&l| 4 * h * l * l * d / if causal { 2 } else { 1 }).sum();
        for (i, (what, _)) in runs.iter().enumerate() {
            if ms[i].is_empty() {
                continue;
            }
            let m = median(&ms[i]);
            println!(
                "{{\"varlen\": \"{what}\", \"lens\": {lens:?}, \"heads\": [{h}, {hkv}, {d}], \"causal\": {causal}, \"dtype\": \"{}\", \"threads\": {threads}, \"reps\": {reps}, \"median_ms\": {m:.3}, \"gflops\": {:.1}, \"faults_per_call\": {}, \"over_packed\": {}, \"over_packed_into\": {}}}",
                format!("{dtype:?}").to_lowercase(),
                flops as f64 / m / 1e6,
                median(&faults[i]),
                ratio(i, 0),
                ratio(i, into),
            );
        }
    }
    Ok(())
}

/// The CPU time of every thread of this process so far, in ns (the first field of
/// `/proc/self/task/*/schedstat`; 0 where that is unreadable): under a loaded host the
/// wall time of a call moves with the other jobs, its CPU time much less.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `--peaks`: prints the f32 FMA and `vdpbf16ps` rates of one core as one JSON line (the
/// median of 7 alternating timings of each; absent where the CPU lacks the instruction).
fn peaks() {
    #[cfg(target_arch = "x86_64")]
    {
        let (fma, dp) = (is_x86_feature_detected!("avx512f"), is_x86_feature_detected!("avx512bf16"));
        let (mut f, mut b) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            if fma {
                // SAFETY: the CPU has AVX-512F.
                f.push(unsafe { rate_fma() });
            }
            if dp {
                // SAFETY: the CPU has AVX-512F and AVX512-BF16.
                b.push(unsafe { rate_dpbf16() });
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).map_or("null".to_string(), |x| format!("{x:.1}"))
        };
        let ratio = match (f.is_empty(), b.is_empty()) {
            (false, false) => format!("{:.3}", b[b.len() / 2] / f[f.len() / 2]),
            _ => "null".to_string(),
        };
        println!(
            "{{\"peaks\": {{\"fma_f32_zmm_gflops\": {}, \"vdpbf16ps_zmm_gflops\": {}, \"vdpbf16ps_over_fma\": {ratio}}}}}",
            med(&mut f),
            med(&mut b)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    println!("{{\"peaks\": null}}");
}

/// 24 independent multiply-adds per iteration into zmm0–zmm23 (`$ins zmmN, zmm30, zmm31`).
#[cfg(target_arch = "x86_64")]
macro_rules! rate_loop {
    ($ins:literal, $flops:expr) => {{
        const ITERS: u64 = 4_000_000;
        let t = Instant::now();
        // SAFETY: the caller has the instruction's features; the block writes only the
        // registers it declares and the counter.
        unsafe {
            std::arch::asm!(
                "vpxord zmm30, zmm30, zmm30",
                "vpxord zmm31, zmm31, zmm31",
                "2:",
                concat!($ins, " zmm0, zmm30, zmm31"), concat!($ins, " zmm1, zmm30, zmm31"),
                concat!($ins, " zmm2, zmm30, zmm31"), concat!($ins, " zmm3, zmm30, zmm31"),
                concat!($ins, " zmm4, zmm30, zmm31"), concat!($ins, " zmm5, zmm30, zmm31"),
                concat!($ins, " zmm6, zmm30, zmm31"), concat!($ins, " zmm7, zmm30, zmm31"),
                concat!($ins, " zmm8, zmm30, zmm31"), concat!($ins, " zmm9, zmm30, zmm31"),
                concat!($ins, " zmm10, zmm30, zmm31"), concat!($ins, " zmm11, zmm30, zmm31"),
                concat!($ins, " zmm12, zmm30, zmm31"), concat!($ins, " zmm13, zmm30, zmm31"),
                concat!($ins, " zmm14, zmm30, zmm31"), concat!($ins, " zmm15, zmm30, zmm31"),
                concat!($ins, " zmm16, zmm30, zmm31"), concat!($ins, " zmm17, zmm30, zmm31"),
                concat!($ins, " zmm18, zmm30, zmm31"), concat!($ins, " zmm19, zmm30, zmm31"),
                concat!($ins, " zmm20, zmm30, zmm31"), concat!($ins, " zmm21, zmm30, zmm31"),
                concat!($ins, " zmm22, zmm30, zmm31"), concat!($ins, " zmm23, zmm30, zmm31"),
                "dec {n}",
                "jnz 2b",
                n = inout(reg) ITERS => _,
                out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _,
                out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _,
                out("zmm10") _, out("zmm11") _, out("zmm12") _, out("zmm13") _, out("zmm14") _,
                out("zmm15") _, out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
                out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
                out("zmm30") _, out("zmm31") _,
                options(nostack, nomem),
            );
        }
        (ITERS * 24) as f64 * $flops / t.elapsed().as_secs_f64() / 1e9
    }};
}

/// GFLOP/s of `vfmadd231ps` zmm (32 flops each) on this thread.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rate_fma() -> f64 {
    rate_loop!("vfmadd231ps", 32.0)
}

/// GFLOP/s of `vdpbf16ps` zmm (16 lanes × 2 products × 2 flops = 64 flops each) on this
/// thread.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn rate_dpbf16() -> f64 {
    rate_loop!("vdpbf16ps", 64.0)
}
