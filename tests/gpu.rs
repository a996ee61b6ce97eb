//! Every GPU check, in one test binary (each file in tests/ links its own ~37 MB binary, and
//! the GPU machine gets them carried, so they live together here).
//!
//! Without the `cuda` feature, or without a CUDA device, every test prints
//! `SKIPPED: <test>: <reason>` and returns; run with `--nocapture` to see the lines.
//! scripts/device-run.sh treats a SKIPPED line on the GPU machine as a failure.
//!
//! * `gpu_sweep_{f32,f16,bf16}`: the random sweep of tests/common on CUDA, 500 cases each,
//!   with the GPU size space (decode caches up to 32k).
//! * `gpu_hopper_prefill`: on a compute-capability 9.0 GPU, random prefill cases with the head
//!   dims the Hopper kernel covers, each run on the default kernels (which must be the Hopper
//!   kernel where a tensor map describes the inputs) and forced onto the sm_80 kernel.
//! * `gpu_decode`: sq 1..16 against sk up to 32k, GQA 1, 4, 8 and MQA, every mask kind, each
//!   case on both kernel generations (on 9.0 GPUs the default merges the splits in a launch of
//!   its own, kernels/decode_sm90.cu; forced sm_80, in the split kernel).
//! * `gpu_errors`: bad input on CUDA returns an `Error` naming the problem (also
//!   `attention_varlen_into` with an output on another device or shared with q).
//! * `gpu_output_poisoned`: every element written, fully masked rows exactly zero, two runs
//!   bit-identical. `gpu_poison_reaches_allocations` checks the poisoning itself.
//! * `gpu_nan_*`: NaN confinement, as the crate documents it.
//! * `gpu_torch_oracle`: PyTorch float64 SDPA outputs from scripts/torch_oracle.py, read from
//!   `$FUSED_ATTN_ORACLE_DIR`.
//! * `gpu_sanitizer_subset`: a few small shapes per dtype and mask, forward and backward, for
//!   compute-sanitizer.
//! * `gpu_grad_sweep_{f32,f16,bf16}`: dq, dk, dv of random cases against the f64 autograd
//!   oracle (`common::grad`), 200 cases each, into poisoned memory.
//! * `gpu_lse`: `attention_with_lse` on CUDA against the f64 oracle.
//! * `gpu_hopper_backward`: the Hopper backward main kernel against the f64 oracle, every
//!   case on both kernel generations (compute capability 9.0 only).
//! * `gpu_varlen_sweep_{f32,f16,bf16}`: random packed batches (lengths 0, 1, odd; packed or
//!   paged K/V with shuffled block tables in larger pools, pages 16, 32, 64, 256 and odd;
//!   prefix ranges; head dims 8..512; GQA; every mask and score feature; strided views),
//!   250 cases each, against `attention_ref_varlen` in f64; every 4th also checks the LSE.
//! * `gpu_varlen_paged_decode`: paged decode and mixed prefill/decode batches, on both kernel
//!   generations as `gpu_decode`.
//! * `gpu_varlen_matches_dense_per_sequence`: packed rows bit-identical to dense calls.
//! * `gpu_varlen_into`: `attention_varlen_into` on CUDA bit-identical to `attention_varlen`,
//!   nothing written outside `out` (aligned views and a misaligned one).
//! * `gpu_device_indices_wait_for_their_writer`: GPU-resident index tensors read only after
//!   their writer, on both device kinds (`FUSED_ATTN_TEST_OWN_STREAM=1` runs every test on
//!   devices of their own stream, where the varlen sweeps assert the side-stream read).
//! * `gpu_sanitizer_varlen`: small packed/paged batches for compute-sanitizer.
//! * `gpu_varlen_grad_sweep`: packed gradients through autograd against the f64 oracle.
//!
//! Every GPU call runs into poisoned memory (see [`poison_pool`]), and every comparison uses
//! the crate's one tolerance rule, `common::CaseResult::passes`. Seeds are fresh per run and
//! printed; `FUSED_ATTN_SEED=N` reproduces a run.

mod common;

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{
    attention, attention_backward, attention_ref, attention_with_lse, take_last_backward_kernel,
    take_last_decode_combine, take_last_prefill_kernel, take_last_prefill_multicast, take_last_prefill_pairs,
    take_last_prefill_tail, with_cuda_kernels, AttnParams, CudaKernels,
};
use common::{case_seed, measure_with, oracle, Alibi, Case, CaseResult, FloorInputs, Limits};
use rayon::prelude::*;

const SWEEP_CASES: usize = 500;
/// Cases whose inputs and oracle are computed at once (bounded: each holds its f64 copies).
const PREPARE_AHEAD: usize = 8;

/// The CUDA device, or `None` after printing why the test is skipped.
/// The device's SM count (0 when built without `cuda`, or for a device that is not CUDA).
fn dev_sms(dev: &Device) -> usize {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = dev {
        use candle_core::cuda_backend::cudarc::driver::sys::CUdevice_attribute;
        let attr = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        return d.cuda_stream().context().attribute(attr).map_or(0, |n| n.max(0) as usize);
    }
    let _ = dev;
    0
}

fn cuda_device(test: &str) -> Option<Device> {
    if !cfg!(feature = "cuda") {
        println!("SKIPPED: {test}: built without the `cuda` feature (build with --features cuda)");
        return None;
    }
    // FUSED_ATTN_TEST_OWN_STREAM=1: every test's device runs a stream of its own
    // (`Device::new_cuda_with_stream`, cudarc's multi-stream mode), where GPU-resident index
    // tensors take the side-stream read of src/cuda/indices.rs: the varlen sweeps then check
    // that read on every case.
    match if own_stream_devices() { Device::new_cuda_with_stream(0) } else { Device::new_cuda(0) } {
        Ok(dev) => {
            if own_stream_devices() {
                println!("{test}: on a device of its own stream (FUSED_ATTN_TEST_OWN_STREAM=1)");
            }
            Some(dev)
        }
        Err(e) => {
            // candle appends a backtrace when RUST_BACKTRACE is set: the first line says it.
            println!("SKIPPED: {test}: no CUDA device 0: {}", e.to_string().lines().next().unwrap_or_default());
            None
        }
    }
}

/// `FUSED_ATTN_TEST_OWN_STREAM=1`: [`cuda_device`] makes devices of their own stream.
fn own_stream_devices() -> bool {
    std::env::var("FUSED_ATTN_TEST_OWN_STREAM").as_deref() == Ok("1")
}

fn fresh_seed(test: &str) -> u64 {
    let seed = match std::env::var("FUSED_ATTN_SEED") {
        Ok(s) => s.parse().expect("FUSED_ATTN_SEED must be an integer"),
        Err(_) => rand::random(),
    };
    println!("{test}: seed {seed} (FUSED_ATTN_SEED={seed} reproduces)");
    seed
}

/// Fills `bytes` of device memory with all-ones bits (NaN in f32, f16 and bf16) and frees
/// it. candle allocates from CUDA's stream-ordered pool, so the next allocations on the
/// same stream, our output among them, reuse this memory: an element the kernel never
/// writes stays NaN and fails the finiteness check. `gpu_poison_reaches_allocations`
/// checks that the pool really hands it back.
fn poison_pool(dev: &Device, bytes: usize) -> Result<()> {
    drop(Tensor::full(u32::MAX, bytes.div_ceil(4).max(1), dev)?);
    Ok(())
}

/// Enough poison for the output and any scratch the op allocates (split-KV partials).
fn poison_for(dev: &Device, q: &Tensor) -> Result<()> {
    poison_pool(dev, (8 * q.elem_count() * q.dtype().size_in_bytes()).max(1 << 20))
}

/// A case's inputs in its dtype and its f64 oracle, all on the CPU. Drawing inputs and the
/// f64 oracle are the slow part of a GPU check, so they run for several cases at once on
/// the CPU cores while the GPU part stays on the test's thread.
struct Prepared {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    params: AttnParams,
    oracle: Tensor,
}

fn prepare(case: &Case, dtype: DType) -> Result<Prepared> {
    let (q, k, v, params) = case.inputs(&Device::Cpu, dtype)?;
    let oracle = oracle(&q, &k, &v, &params)?;
    Ok(Prepared { q, k, v, params, oracle })
}

/// One prepared case on `dev`: the inputs moved there (keeping their strided layouts), our
/// op into poisoned memory, and the naive path in the same dtype (on `dev`, or on the CPU
/// when `naive_on_cpu`, so that only our kernels run on the GPU), against the f64 oracle.
fn check(dev: &Device, dtype: DType, prep: &Prepared, naive_on_cpu: bool) -> Result<CaseResult> {
    let (q, k, v) = (prep.q.to_device(dev)?, prep.k.to_device(dev)?, prep.v.to_device(dev)?);
    let mut p = prep.params.clone();
    p.alibi_slopes = p.alibi_slopes.as_ref().map(|s| s.to_device(dev)).transpose()?;
    poison_for(dev, &q)?;
    let fused = attention(&q, &k, &v, &p)?;
    assert_eq!((fused.dims(), fused.dtype()), (q.dims(), dtype), "fused output shape and dtype");
    let naive = if naive_on_cpu {
        attention_ref(&prep.q, &prep.k, &prep.v, &prep.params)?
    } else {
        attention_ref(&q, &k, &v, &p)?
    };
    let floor_inputs = FloorInputs::new(&prep.q, &prep.k, &prep.v, &prep.oracle, prep.params.softmax_scale)?;
    measure_with(dtype, &fused, &naive, &prep.oracle, &floor_inputs)
}

fn describe(case: &Case) -> String {
    let mut s = format!(
        "(b{},h{},hkv{},sq{},sk{},d{})",
        case.batch, case.heads, case.kv_heads, case.seq_q, case.seq_k, case.head_dim
    );
    if case.causal {
        s += " causal";
    }
    if (case.window_left, case.window_right) != (None, None) {
        s += &format!(" window ({:?},{:?})", case.window_left, case.window_right);
    }
    if let Some(c) = case.softcap {
        s += &format!(" softcap {c}");
    }
    if case.alibi != Alibi::None {
        s += &format!(" alibi {:?}", case.alibi);
    }
    s
}

/// Checks every (dtype, case), prints each failure and the worst margin, fails if any did.
/// Cases are prepared on the CPU [`PREPARE_AHEAD`] at a time, in parallel.
fn check_all(test: &str, dev: &Device, cases: &[(DType, Case)], naive_on_cpu: bool) {
    check_all_on(test, dev, cases, naive_on_cpu, &[CudaKernels::Auto]);
}

/// Records one checked case `what` of `test`: the worst margin so far, and a failure (printed
/// as it happens) when `r` is outside its tolerance.
fn record_result(test: &str, what: &str, r: &CaseResult, worst: &mut (f64, String), failures: &mut Vec<String>) {
    if r.ratio() > worst.0 {
        *worst = (r.ratio(), what.to_string());
    }
    if !r.passes() {
        let line = format!("{what}: {r:?}, allowed {:.3e}", r.allowed());
        println!("{test}: FAIL {line}");
        failures.push(line);
    }
}

/// The results of a checker's cases, each run on one or more kernel generations: failures, the
/// worst margin, and what the decode calls did (how many default runs launched the separate
/// combine of compute capability 9.0; a forced sm_80 run that launched it is a failure).
struct CaseTally {
    start: std::time::Instant,
    failures: Vec<String>,
    worst: (f64, String),
    combine_runs: usize,
}

impl CaseTally {
    fn new() -> Self {
        CaseTally {
            start: std::time::Instant::now(),
            failures: Vec::new(),
            worst: (0.0, String::new()),
            combine_runs: 0,
        }
    }

    /// Runs `check` on `kernels` and records its result and how its decode merged the splits.
    fn run(&mut self, test: &str, what: &str, kernels: CudaKernels, check: impl FnOnce() -> Result<CaseResult>) {
        take_last_decode_combine();
        let r = with_cuda_kernels(kernels, check).unwrap_or_else(|e| panic!("{test}: {what}: error {e}"));
        match (kernels, take_last_decode_combine()) {
            (CudaKernels::Sm80, Some(Some(name))) => {
                self.failures.push(format!("{what}: forced sm80 but launched the combine kernel {name}"))
            }
            (CudaKernels::Auto, Some(Some(_))) => self.combine_runs += 1,
            _ => {}
        }
        record_result(test, what, &r, &mut self.worst, &mut self.failures);
    }

    /// Prints the summary and fails on any failure; returns the default runs that launched the
    /// decode's separate combine.
    fn finish(self, test: &str, cases: usize, generations: usize) -> usize {
        println!(
            "{test}: {cases} cases × {generations} kernel generations, {} failed, {} default runs launched the decode \
             combine; worst error/allowed {:.3} at {}; {:.1} s",
            self.failures.len(),
            self.combine_runs,
            self.worst.0,
            self.worst.1,
            self.start.elapsed().as_secs_f64()
        );
        assert!(
            self.failures.is_empty(),
            "{test}: {} of {cases} cases failed:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
        self.combine_runs
    }
}

/// Whether this device's default decode merges the splits of a long-cache bf16 decode step in
/// a launch of its own (compute capability 9.0, kernels/decode_sm90.cu).
fn decode_combine_launches(dev: &Device) -> Result<bool> {
    let q = Tensor::ones((1, 1, 32, 128), DType::BF16, dev)?;
    let kv = Tensor::ones((1, 4096, 8, 128), DType::BF16, dev)?;
    take_last_decode_combine();
    attention(&q, &kv, &kv, &AttnParams::new(0.1))?;
    Ok(matches!(take_last_decode_combine(), Some(Some(_))))
}

/// [`check_all`], each case once per kernel generation of `generations` (one f64 oracle); returns
/// how many default runs launched the decode's separate combine.
fn check_all_on(
    test: &str,
    dev: &Device,
    cases: &[(DType, Case)],
    naive_on_cpu: bool,
    generations: &[CudaKernels],
) -> usize {
    let mut tally = CaseTally::new();
    for chunk in cases.chunks(PREPARE_AHEAD) {
        let prepared: Vec<_> = chunk.par_iter().map(|(dtype, case)| prepare(case, *dtype)).collect();
        for ((dtype, case), prep) in chunk.iter().zip(prepared) {
            let prep = prep.unwrap_or_else(|e| {
                panic!("{test}: {dtype:?} {} (case seed {}): error {e}", describe(case), case.seed)
            });
            for &kernels in generations {
                let what = format!("{dtype:?} {} (case seed {}) {kernels:?}", describe(case), case.seed);
                tally.run(test, &what, kernels, || check(dev, *dtype, &prep, naive_on_cpu));
            }
        }
    }
    tally.finish(test, cases.len(), generations.len())
}

fn sweep(test: &str, dtype: DType) {
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let limits = Limits::gpu();
    let cases: Vec<_> = (0..SWEEP_CASES).map(|i| (dtype, Case::random(case_seed(seed, i), &limits))).collect();
    check_all(test, &dev, &cases, false);
}

#[test]
fn gpu_sweep_f32() {
    sweep("gpu_sweep_f32", DType::F32);
}

#[test]
fn gpu_sweep_f16() {
    sweep("gpu_sweep_f16", DType::F16);
}

#[test]
fn gpu_sweep_bf16() {
    sweep("gpu_sweep_bf16", DType::BF16);
}

const HOPPER_CASES: usize = 240;

/// The Hopper tests' bookkeeping: each case runs on both kernel generations (the default, and
/// the sm_80 kernel forced); a failure is a result outside the tolerance, a forced sm_80 run
/// that took the Hopper kernel, or a default run of a case the Hopper kernel covers that took
/// another kernel.
struct HopperTally {
    test: &'static str,
    failures: Vec<String>,
    hopper_runs: usize,
    /// Default runs whose last launch split its tiles over clusters of blocks (small d64 grids).
    pair_runs: usize,
    /// Default runs whose last launch cut its persistent grid's last round into pieces (d128).
    tail_runs: usize,
    /// Default runs whose last launch shared K/V tiles over clusters of two blocks (d128).
    multicast_runs: usize,
    /// The prefill kernels the default (`Auto`) runs took.
    ran: std::collections::BTreeSet<&'static str>,
    worst: (f64, String),
    start: std::time::Instant,
}

impl HopperTally {
    fn new(test: &'static str) -> Self {
        HopperTally {
            test,
            failures: Vec::new(),
            hopper_runs: 0,
            pair_runs: 0,
            tail_runs: 0,
            multicast_runs: 0,
            ran: std::collections::BTreeSet::new(),
            worst: (0.0, String::new()),
            start: std::time::Instant::now(),
        }
    }

    /// Runs `check` once per generation; `what` describes the case, `coverable` says whether the
    /// Hopper kernel must take it by default.
    fn run(&mut self, what: &str, coverable: bool, check: impl Fn() -> Result<CaseResult>) {
        let test = self.test;
        for kernels in [CudaKernels::Auto, CudaKernels::Sm80] {
            take_last_prefill_kernel();
            take_last_prefill_pairs();
            take_last_prefill_tail();
            take_last_prefill_multicast();
            let r =
                with_cuda_kernels(kernels, &check).unwrap_or_else(|e| panic!("{test}: {what} {kernels:?}: error {e}"));
            let ran = take_last_prefill_kernel().unwrap_or("no prefill kernel");
            let pairs = take_last_prefill_pairs();
            let tail = take_last_prefill_tail();
            let multicast = take_last_prefill_multicast();
            if kernels == CudaKernels::Auto {
                self.ran.insert(ran);
                self.pair_runs += pairs as usize;
                self.tail_runs += (tail > 0) as usize;
                self.multicast_runs += multicast as usize;
            }
            let what =
                if tail > 0 { format!("{what} (last round in {tail} pieces per tile)") } else { what.to_string() };
            let what = if multicast { format!("{what} (K/V multicast)") } else { what };
            let what = format!("{what} {kernels:?} ran {ran}");
            if kernels == CudaKernels::Sm80 && is_hopper(ran) {
                self.failures.push(format!("{what}: forced sm80 but ran the Hopper kernel"));
            }
            if kernels == CudaKernels::Auto {
                if is_hopper(ran) {
                    self.hopper_runs += 1;
                } else if coverable && ran != "no prefill kernel" {
                    self.failures.push(format!("{what}: should have run the Hopper kernel"));
                }
            }
            record_result(test, &what, &r, &mut self.worst, &mut self.failures);
        }
    }

    /// Prints the summary; fails on any failure, or if fewer than a third of the `cases` ran the
    /// Hopper kernel.
    fn finish(self, cases: usize) {
        let test = self.test;
        println!(
            "{test}: {cases} cases × 2 kernel generations, {} on the Hopper kernel ({} split over clusters, {} with \
             the last round in pieces, {} with K/V multicast), {} failures; worst error/allowed {:.3} at {}; {:.1} s",
            self.hopper_runs,
            self.pair_runs,
            self.tail_runs,
            self.multicast_runs,
            self.failures.len(),
            self.worst.0,
            self.worst.1,
            self.start.elapsed().as_secs_f64()
        );
        assert!(
            self.hopper_runs * 3 >= cases,
            "{test}: only {} of {cases} cases ran the Hopper kernel",
            self.hopper_runs
        );
        assert!(self.failures.is_empty(), "{test}: {} failures:\n{}", self.failures.len(), self.failures.join("\n"));
    }
}

/// The Hopper prefill kernel (kernels/fwd_sm90.cu): random prefill cases (sq ≥ 129, every mask,
/// softcap, ALiBi, GQA, every input layout) in f16 and bf16, with the head dims it covers
/// (multiples of 8 up to 256, each zero-padded to its instance's), each run twice on one GPU: on the
/// default kernels and forced onto the sm_80 kernels, both against the f64 oracle. The default
/// run must take the Hopper kernel for every case whose inputs are contiguous or head-major
/// views (tensor maps describe them), and for at least a third of all cases, so that the test
/// cannot pass on the sm_80 kernel alone. Skips (with a message) on GPUs other than 9.0.
#[test]
fn gpu_hopper_prefill() {
    let test = "gpu_hopper_prefill";
    let Some(dev) = cuda_device(test) else { return };
    // Probe: a dense bf16 d128 prefill call takes the Hopper kernel exactly on 9.0 GPUs.
    let probe = Tensor::zeros((1, 256, 2, 128), DType::BF16, &dev).unwrap();
    take_last_prefill_kernel();
    attention(&probe, &probe, &probe, &AttnParams::new(0.1)).unwrap();
    let probe_kernel = take_last_prefill_kernel().unwrap_or("none");
    if !probe_kernel.ends_with("_sm90") {
        println!("SKIPPED: {test}: the device is not compute capability 9.0 (a bf16 d128 prefill ran {probe_kernel})");
        return;
    }
    let seed = fresh_seed(test);
    let limits = Limits { decode_fraction: 0.0, ..Limits::gpu() };
    // Every instance (64, 96, 128, 192, 256) and dims padded up to each; 13 entries, so that the
    // dtype (i % 2) meets every dim.
    const DIMS: [usize; 13] = [8, 40, 64, 72, 96, 104, 120, 128, 136, 176, 192, 200, 256];
    // FUSED_ATTN_HOPPER_CASES=N runs fewer (compute-sanitizer runs of this test).
    let n = std::env::var("FUSED_ATTN_HOPPER_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(HOPPER_CASES);
    let cases: Vec<_> = (0..n)
        .map(|i| {
            let mut c = Case::random(case_seed(seed, i), &limits);
            c.head_dim = DIMS[i % DIMS.len()];
            // Above 128 query rows no problem takes the decode kernel (src/cuda/heuristics.rs).
            c.seq_q = c.seq_q.max(129);
            (if i % 2 == 0 { DType::BF16 } else { DType::F16 }, c)
        })
        .chain(persistent_cases(seed, n))
        .collect();
    let mut tally = HopperTally::new(test);
    // The persistent cases send dense plain problems to each wide instance (src/cuda/
    // prefill_sm90.rs `wide_instance`): the test fails if the default kernels never took one.
    let wide = [
        "fattn_fwd_bf16_d128_wide_sm90",
        "fattn_fwd_f16_d128_wide_sm90",
        "fattn_fwd_bf16_d256_wide_sm90",
        "fattn_fwd_f16_d256_wide_sm90",
    ];
    for chunk in cases.chunks(PREPARE_AHEAD) {
        let prepared: Vec<_> = chunk.par_iter().map(|(dtype, case)| prepare(case, *dtype)).collect();
        for ((dtype, case), prep) in chunk.iter().zip(prepared) {
            let prep = prep.unwrap_or_else(|e| panic!("{test}: {} prepare: {e}", describe(case)));
            let describable = case
                .layouts
                .iter()
                .all(|l| matches!(l, common::InputLayout::Contiguous | common::InputLayout::HeadsMajor));
            let what = format!("{dtype:?} {} (case seed {})", describe(case), case.seed);
            tally.run(&what, describable, || check(&dev, *dtype, &prep, false));
        }
    }
    if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_none() {
        for name in wide {
            assert!(tally.ran.contains(name), "{test}: no case ran {name} (ran: {:?})", tally.ran);
        }
        // Head dims 72-96 run on the d96 instances (unless FUSED_ATTN_SM90_D96=0 sends them to d128).
        if std::env::var("FUSED_ATTN_SM90_D96").map_or(true, |v| v.trim() != "0") {
            let d96 = ["fattn_fwd_bf16_d96_sm90", "fattn_fwd_f16_d96_sm90"];
            assert!(d96.iter().all(|n| tally.ran.contains(n)), "{test}: no case ran {d96:?} (ran: {:?})", tally.ran);
        }
        // Small d64 grids split their tiles over clusters of blocks (src/cuda/prefill_sm90.rs
        // `pair_split`): the random cases must have run some.
        assert!(tally.pair_runs > 0, "{test}: no case split its tiles over a cluster of blocks");
        // Persistent d128 grids cut their last round's tiles into pieces of key blocks
        // (`tail_pieces`): the persistent cases must have run some (when the GPU has 132 SMs,
        // for which they are made; elsewhere, if the shapes happen to split).
        if tally.tail_runs == 0 {
            let sms = dev_sms(&dev);
            assert!(sms != 132, "{test}: no case cut its last round into pieces on a GPU of {sms} SMs");
            println!(
                "{test}: no case cut its last round into pieces on this GPU of {sms} SMs (the cases are made for 132)"
            );
        }
        // Unmasked persistent d128 grids with an even number of query blocks per head share
        // K/V tiles over clusters of two blocks (`kv_multicast`): the persistent cases must
        // have run some (on any GPU with an even SM count, as H100s and H200s have).
        let sms = dev_sms(&dev);
        assert!(
            tally.multicast_runs > 0 || !sms.is_multiple_of(2),
            "{test}: no case shared K/V tiles over a cluster (GPU of {sms} SMs)"
        );
    } else {
        println!("{test}: wide-instance coverage not checked: FUSED_ATTN_SM90_TILE_RULES is set");
    }
    tally.finish(cases.len());
}

/// K/V multicast (kernels/fwd_sm90.cu `kMulticast`, src/cuda/prefill_sm90.rs `kv_multicast`):
/// unmasked d128 problems with more query tiles than the GPU has SMs and an even number of
/// query blocks per head, so that the persistent grid runs as clusters of two blocks that load
/// half of each K/V tile into both: the plain and wide d128 instances, a last round cut into
/// pieces, GQA, a padded head dim, head-major inputs and 4224 keys (the wide instance,
/// checked), in f16 and bf16, each against the f64
/// oracle on the default kernels and forced onto the sm_80 ones. Every case must have run the
/// multicast (on a GPU with an even SM count, the default tile rules). Small enough for
/// compute-sanitizer (`FUSED_ATTN_MULTICAST_CASES=N` runs the first N;
/// `FUSED_ATTN_NAIVE_ON_CPU=1` builds the naive reference on the CPU, so that racecheck sees
/// only our kernels and candle's, not cuBLAS's). Skips on GPUs other than 9.0.
#[test]
fn gpu_hopper_multicast() {
    let test = "gpu_hopper_multicast";
    let Some(dev) = cuda_device(test) else { return };
    let probe = Tensor::zeros((1, 256, 2, 128), DType::BF16, &dev).unwrap();
    take_last_prefill_kernel();
    attention(&probe, &probe, &probe, &AttnParams::new(0.1)).unwrap();
    let probe_kernel = take_last_prefill_kernel().unwrap_or("none");
    if !probe_kernel.ends_with("_sm90") {
        println!("SKIPPED: {test}: the device is not compute capability 9.0 (a bf16 d128 prefill ran {probe_kernel})");
        return;
    }
    let seed = fresh_seed(test);
    let shapes = [
        // (batch, heads, kv_heads, seq_q, seq_k, head_dim)
        (1, 34, 34, 1024, 256, 128), // plain d128: 272 tiles, a last round of 8 in 2 pieces
        (2, 20, 4, 1024, 700, 104),  // wide d128 (d104 padded), GQA 5:1: 320 tiles, 56 in 2 pieces
        (1, 40, 8, 512, 2048, 128),  // plain d128, GQA 5:1: 160 tiles, 28 in 4 pieces
        (3, 16, 16, 768, 333, 128),  // wide d128, head-major q and v: 288 tiles, 24 in 2 pieces
        (2, 33, 11, 512, 1000, 120), // plain d128 (d120 padded), GQA 3:1: 264 tiles, two whole rounds
        (1, 40, 8, 512, 4224, 128),  // wide d128, long keys (24 blocks of 176, 33 of 128): 160 tiles
    ];
    let n = std::env::var("FUSED_ATTN_MULTICAST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(shapes.len());
    let cases: Vec<_> = shapes
        .iter()
        .take(n)
        .enumerate()
        .map(|(j, &shape)| {
            let mut c = Case::plain(case_seed(seed, j), shape);
            if j == 3 {
                c.layouts =
                    [common::InputLayout::HeadsMajor, common::InputLayout::Contiguous, common::InputLayout::HeadsMajor];
            }
            (if j % 2 == 0 { DType::BF16 } else { DType::F16 }, c)
        })
        .collect();
    let naive_on_cpu = std::env::var_os("FUSED_ATTN_NAIVE_ON_CPU").is_some();
    let mut tally = HopperTally::new(test);
    for (dtype, case) in &cases {
        let prep = prepare(case, *dtype).unwrap_or_else(|e| panic!("{test}: {} prepare: {e}", describe(case)));
        let what = format!("{dtype:?} {} (case seed {})", describe(case), case.seed);
        tally.run(&what, true, || check(&dev, *dtype, &prep, naive_on_cpu));
        // The long-key case (4224 keys, no padding in either instance's blocks) must run on the
        // wide d128 instance (src/cuda/prefill_sm90.rs wide_instance).
        if case.seq_k >= 4096 && std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_none() {
            take_last_prefill_kernel();
            check(&dev, *dtype, &prep, naive_on_cpu).unwrap_or_else(|e| panic!("{test}: {what}: error {e}"));
            let ran = take_last_prefill_kernel().unwrap_or("no prefill kernel");
            assert!(ran.contains("_d128_wide_"), "{test}: {what} ran {ran}, not the wide d128 instance");
        }
    }
    let sms = dev_sms(&dev);
    // The shapes have 160 or more tiles: strided grids on any Hopper GPU of fewer SMs.
    if std::env::var_os("FUSED_ATTN_SM90_TILE_RULES").is_none() && sms.is_multiple_of(2) && sms < 160 {
        assert_eq!(
            tally.multicast_runs,
            cases.len(),
            "{test}: {} of {} cases shared K/V tiles over clusters (GPU of {sms} SMs)",
            tally.multicast_runs,
            cases.len()
        );
    } else {
        println!("{test}: multicast coverage not checked (FUSED_ATTN_SM90_TILE_RULES set, or a GPU of {sms} SMs)");
    }
    tally.finish(cases.len());
}

/// Problems with more query tiles than an H100 or H200 has SMs (132), so that the plain
/// d64/d96/d128 and the wide d128 Hopper instances run a persistent grid (the wide d256 one
/// takes one block per tile, on many tiles) in which each block
/// takes two or more tiles (src/cuda/prefill_sm90.rs), by a fixed stride (unmasked) or drawn
/// from a counter (causal, windows): tiles of 192 (d64) and 128 rows, partial last tiles and
/// key blocks (176 keys unmasked at d128, 80 at d256), uneven tiles per block, GQA 8:1 and
/// MQA, head dims padded up, and head-major inputs that the tensor maps read through their
/// strides; and small wide grids (one block per tile, fewer keys than one block). The random
/// cases above rarely have that many tiles.
fn persistent_cases(seed: u64, first: usize) -> Vec<(DType, Case)> {
    let shapes = [
        // (batch, heads, kv_heads, seq_q, seq_k, head_dim): tiles
        (2, 16, 2, 1000, 777, 64),   // 6 · 32 = 192 tiles of 192 rows
        (3, 12, 12, 900, 513, 128),  // 8 · 36 = 288
        (1, 32, 4, 1100, 300, 96),   // 9 · 32 = 288, the persistent d96 instance
        (4, 12, 1, 530, 1031, 64),   // 3 · 48 = 144: 12 blocks take two tiles, 120 one
        (5, 10, 1, 531, 260, 128),   // 5 · 50 = 250, MQA
        (2, 16, 2, 1000, 1200, 64),  // causal: blocks draw tiles of unequal cost
        (3, 12, 12, 900, 513, 128),  // a window of 100 keys left and 7 right
        (4, 12, 4, 700, 700, 128),   // causal with a left window
        (2, 16, 16, 1100, 900, 256), // wide d256: 9 · 32 = 288 tiles, 80-key blocks
        (3, 16, 2, 900, 1300, 256),  // wide d256 causal: drawn tiles
        (2, 32, 8, 800, 800, 200),   // wide d256 (d200 padded), a window of 50 left and 20 right
        (6, 24, 8, 257, 1400, 120),  // wide d128 (d120 padded): 3 · 144 = 432 tiles
        (1, 8, 8, 300, 170, 128),    // wide d128, 24 tiles (one block each), keys < one block
        (2, 16, 4, 1500, 900, 56),   // d64 (d56 padded), causal, sq > sk: the top 600 rows see no key
        (3, 12, 12, 777, 1333, 64),  // d64: a window of 200 left and 60 right
        (2, 16, 2, 1000, 1000, 64),  // d64: causal with a left window of 300
        // K/V multicast (even query blocks per head, unmasked, d128): plain d128, 2 · 20 · 8 =
        // 320 tiles (last round of 56 in 2 pieces), GQA 5:1, head-major K/V; wide d128 (d104
        // padded), 192 tiles (last round of 60 in 2 pieces).
        (2, 20, 4, 1024, 1024, 128),
        (1, 24, 24, 1000, 700, 104),
        // The persistent d96 instance in both dtypes: d80 padded, causal, drawn tiles (bf16);
        // unmasked, 3 · 8 · 8 = 192 tiles (f16).
        (2, 16, 4, 900, 1100, 80),
        (3, 8, 8, 1000, 600, 96),
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(j, &shape)| {
            let mut c = Case::plain(case_seed(seed, first + j), shape);
            match j {
                2 => {
                    c.layouts = [
                        common::InputLayout::HeadsMajor,
                        common::InputLayout::Contiguous,
                        common::InputLayout::HeadsMajor,
                    ]
                }
                4 => c.softmax_scale = 0.3,
                5 => c.causal = true,
                6 => (c.window_left, c.window_right) = (Some(100), Some(7)),
                7 => (c.causal, c.window_left) = (true, Some(64)),
                9 => c.causal = true,
                10 => (c.window_left, c.window_right) = (Some(50), Some(20)),
                13 => c.causal = true,
                14 => (c.window_left, c.window_right) = (Some(200), Some(60)),
                15 => (c.causal, c.window_left) = (true, Some(300)),
                18 => c.causal = true,
                16 => {
                    c.layouts = [
                        common::InputLayout::Contiguous,
                        common::InputLayout::HeadsMajor,
                        common::InputLayout::HeadsMajor,
                    ]
                }
                11 => {
                    c.layouts = [
                        common::InputLayout::Contiguous,
                        common::InputLayout::HeadsMajor,
                        common::InputLayout::HeadsMajor,
                    ]
                }
                _ => {}
            }
            (if j % 2 == 0 { DType::BF16 } else { DType::F16 }, c)
        })
        .collect()
}

/// Decode: a KV-cache step (sq 1) and speculative steps (sq up to 16) against caches of up
/// to 32k, with GQA ratios 1, 4, 8 and MQA, every mask kind, every dtype: 80 cases. Half of
/// the (GQA, sq) pairs get a 32k cache and half 16k, and heads stay at 8..16: the CPU-side
/// input generation and f64 oracle dominate the time (a first version with 32 heads and
/// 32k everywhere ran past 100 s on the GPU machine).
#[test]
fn gpu_decode() {
    let Some(dev) = cuda_device("gpu_decode") else { return };
    let seed = fresh_seed("gpu_decode");
    let dtypes = [DType::BF16, DType::F16, DType::F32];
    let mut cases = Vec::new();
    let mut i = 0usize;
    for (g, (heads, kv_heads)) in [(8, 8), (16, 4), (16, 2), (12, 1)].into_iter().enumerate() {
        for (j, seq_q) in [1, 3, 8, 16].into_iter().enumerate() {
            let longest = if (g + j) % 2 == 0 { 32768 } else { 16384 };
            for seq_k in [1, 100, 2049, 8191, longest] {
                let batch = if seq_k >= 8191 { 1 } else { 2 };
                let head_dim = [128, 64, 128, 96][i % 4];
                let mut c = Case::plain(case_seed(seed, i), (batch, heads, kv_heads, seq_q, seq_k, head_dim));
                // (i + i/5) rotates the mask against sk, so every sk meets every mask kind.
                match (i + i / 5) % 5 {
                    0 => c.causal = true,
                    1 => {}
                    2 => (c.window_left, c.window_right) = (Some(seq_k / 3), Some(0)),
                    3 => (c.causal, c.alibi) = (true, Alibi::PerHead),
                    _ => (c.causal, c.softcap) = (true, Some(30.0)),
                }
                cases.push((dtypes[i % 3], c));
                i += 1;
            }
        }
    }
    // Both kernel generations: on a 9.0 GPU the default merges the splits in a launch of its
    // own, the forced sm_80 kernels in the split kernel.
    let combine_runs = check_all_on("gpu_decode", &dev, &cases, false, &[CudaKernels::Auto, CudaKernels::Sm80]);
    if decode_combine_launches(&dev).expect("decode probe ran") {
        assert!(
            combine_runs * 3 >= cases.len(),
            "gpu_decode: only {combine_runs} of {} cases launched the combine",
            cases.len()
        );
    } else {
        println!("gpu_decode: this device merges decode splits in the split kernel (not compute capability 9.0)");
    }
}

fn expect_error(what: &str, result: Result<Tensor>, needle: &str) {
    match result {
        Ok(t) => panic!("gpu_errors: {what}: expected an error containing {needle:?}, got a tensor {:?}", t.dims()),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "gpu_errors: {what}: error {msg:?} does not contain {needle:?}");
            println!("gpu_errors: {what}: {msg}");
        }
    }
}

/// Bad input on CUDA returns an `Error` that names the problem, before any launch.
#[test]
fn gpu_errors() -> Result<()> {
    let Some(dev) = cuda_device("gpu_errors") else { return Ok(()) };
    let cpu = Device::Cpu;
    let t = |dims: (usize, usize, usize, usize), dt: DType, d: &Device| Tensor::zeros(dims, dt, d);
    let q = t((1, 4, 2, 64), DType::BF16, &dev)?;
    let k = t((1, 8, 2, 64), DType::BF16, &dev)?;
    let p = AttnParams::new(0.125);

    let k_cpu = t((1, 8, 2, 64), DType::BF16, &cpu)?;
    expect_error("k on the CPU, q and v on CUDA", attention(&q, &k_cpu, &k, &p), "one device");
    expect_error("q on the CPU, k and v on CUDA", attention(&k_cpu, &k, &k, &p), "one device");
    let slopes_cpu = Tensor::new(&[0.5f32, 0.25], &cpu)?;
    let with_cpu_slopes = AttnParams::new(0.125).alibi_slopes(&slopes_cpu);
    expect_error("ALiBi slopes on the CPU", attention(&q, &k, &k, &with_cpu_slopes), "alibi_slopes on");
    let k16 = t((1, 8, 2, 64), DType::F16, &dev)?;
    expect_error("k f16, q bf16", attention(&q, &k16, &k16, &p), "dtypes differ");
    let (q64, k64) = (t((1, 4, 2, 64), DType::F64, &dev)?, t((1, 8, 2, 64), DType::F64, &dev)?);
    expect_error("f64 on CUDA", attention(&q64, &k64, &k64, &p), "unsupported dtype");
    let (qbig, kbig) = (t((1, 4, 2, 513), DType::BF16, &dev)?, t((1, 8, 2, 513), DType::BF16, &dev)?);
    expect_error("head_dim 513", attention(&qbig, &kbig, &kbig, &p), "above the supported maximum 512");
    let q3 = t((1, 4, 3, 64), DType::BF16, &dev)?;
    expect_error("3 q heads over 2 kv heads", attention(&q3, &k, &k, &p), "must divide");
    let v_short = t((1, 7, 2, 64), DType::BF16, &dev)?;
    expect_error("k and v lengths differ", attention(&q, &k, &v_short, &p), "sequence lengths differ");
    // The caller-owned packed output must be on q's device, and share no storage with the inputs.
    let (qp, kp) = (q.squeeze(0)?, k.squeeze(0)?);
    let vl = candle_fused_attn::Varlen::new(&Tensor::new(&[0u32, 4], &cpu)?, &Tensor::new(&[0u32, 8], &cpu)?, 4, 8);
    let into =
        |out: &Tensor| candle_fused_attn::attention_varlen_into(out, &qp, &kp, &kp, &vl, &p).map(|()| out.clone());
    expect_error("attention_varlen_into, out on the CPU", into(&qp.to_device(&cpu)?), "out is on Cpu");
    expect_error("attention_varlen_into, out is q", into(&qp), "share");
    Ok(())
}

/// The poisoning that every GPU check relies on reaches a later allocation; if candle or
/// the driver stops reusing pool memory, this test says so instead of the checks going blind.
#[test]
fn gpu_poison_reaches_allocations() -> Result<()> {
    let Some(dev) = cuda_device("gpu_poison_reaches_allocations") else { return Ok(()) };
    poison_reaches(&dev)
}

#[cfg(feature = "cuda")]
fn poison_reaches(dev: &Device) -> Result<()> {
    let cuda = dev.as_cuda_device()?;
    let bytes = 3 << 20;
    poison_pool(dev, 4 * bytes)?;
    // SAFETY: the uninitialized slice is only copied back to the host and inspected as
    // bytes; no kernel reads it as data.
    let fresh = unsafe { cuda.alloc::<u8>(bytes)? };
    let host = cuda.clone_dtoh(&fresh)?;
    let poisoned = host.iter().filter(|&&b| b == 0xFF).count();
    println!("gpu_poison_reaches_allocations: {poisoned} of {bytes} bytes of a fresh allocation hold the poison");
    assert_eq!(poisoned, bytes, "the pool did not hand the poisoned memory back: output poisoning is blind");
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn poison_reaches(_: &Device) -> Result<()> {
    unreachable!("cuda_device returns None without the cuda feature")
}

fn to_f64_vec(t: &Tensor) -> Result<Vec<f64>> {
    t.to_device(&Device::Cpu)?.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()
}

/// Every output element is written: the output memory starts as NaN bits, the result is
/// finite, within tolerance, exactly zero on rows that see no key, and the same bits on a
/// second run (a difference means a race or an unwritten element).
#[test]
fn gpu_output_poisoned() -> Result<()> {
    let Some(dev) = cuda_device("gpu_output_poisoned") else { return Ok(()) };
    let seed = fresh_seed("gpu_output_poisoned");
    let shapes = [
        // (b, h, hkv, sq, sk, d), dtype, causal, window
        ((2, 8, 2, 130, 61, 64), DType::BF16, true, (None, None)), // rows 0..69 see no key
        ((1, 4, 4, 1, 4097, 128), DType::F16, true, (None, None)),
        ((1, 32, 8, 16, 32768, 128), DType::BF16, true, (None, None)),
        ((3, 6, 3, 77, 77, 96), DType::F32, false, (Some(5), Some(2))),
        ((1, 4, 1, 200, 90, 256), DType::BF16, false, (Some(20), Some(3))), // some rows empty
        ((2, 16, 16, 513, 513, 32), DType::F16, false, (None, None)),
    ];
    for (i, (shape, dtype, causal, (wl, wr))) in shapes.into_iter().enumerate() {
        let mut case = Case::plain(case_seed(seed, i), shape);
        (case.causal, case.window_left, case.window_right) = (causal, wl, wr);
        let (q, k, v, p) = case.inputs(&dev, dtype)?;
        poison_for(&dev, &q)?;
        let first = attention(&q, &k, &v, &p)?;
        poison_for(&dev, &q)?;
        let second = attention(&q, &k, &v, &p)?;
        let (a, b) = (to_f64_vec(&first)?, to_f64_vec(&second)?);
        let unwritten = a.iter().filter(|x| !x.is_finite()).count();
        assert_eq!(unwritten, 0, "{}: {unwritten} output elements not written (poison left)", describe(&case));
        let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        assert_eq!(differ, 0, "{}: two runs on the same input differ in {differ} elements", describe(&case));

        let reference = oracle(&q, &k, &v, &p)?;
        let floor_inputs = FloorInputs::new(&q, &k, &v, &reference, p.softmax_scale)?;
        let r = measure_with(dtype, &first, &attention_ref(&q, &k, &v, &p)?, &reference, &floor_inputs)?;
        assert!(r.passes(), "{dtype:?} {}: {r:?}", describe(&case));
        // Rows with no visible key are exactly zero (the oracle is zero there too, so the
        // tolerance alone would allow tiny values).
        let (b_, sq, h, d) = q.dims4()?;
        let empty_rows: Vec<usize> = (0..sq).filter(|&i| visible_keys(&p, i, sq, case.seq_k) == 0).collect();
        for bi in 0..b_ {
            for &row in &empty_rows {
                let start = (bi * sq + row) * h * d;
                assert!(
                    a[start..start + h * d].iter().all(|&x| x == 0.0),
                    "{}: empty row {row} not zero",
                    describe(&case)
                );
            }
        }
        println!(
            "gpu_output_poisoned: {dtype:?} {}: ok, {} empty rows, error/allowed {:.3}",
            describe(&case),
            empty_rows.len(),
            r.ratio()
        );
    }
    Ok(())
}

/// How many keys row `i` sees under `p` (bottom-right aligned), as the crate documents.
fn visible_keys(p: &AttnParams, i: usize, sq: usize, sk: usize) -> usize {
    let diag = i as i64 + sk as i64 - sq as i64;
    let right = if p.causal { Some(0) } else { p.window_size_right };
    let lo = p.window_size_left.map_or(0, |l| (diag - l as i64).max(0));
    let hi = right.map_or(sk as i64, |r| (diag + r as i64 + 1).min(sk as i64));
    (hi - lo).max(0) as usize
}

/// `t` with one (batch, seq, head) row set to NaN, on `t`'s device.
fn with_nan_row(t: &Tensor, (b, s, h): (usize, usize, usize)) -> Result<Tensor> {
    let (_, sn, hn, d) = t.dims4()?;
    let mut data = t.to_device(&Device::Cpu)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let start = ((b * sn + s) * hn + h) * d;
    data[start..start + d].fill(f32::NAN);
    Tensor::from_vec(data, t.dims(), &Device::Cpu)?.to_dtype(t.dtype())?.to_device(t.device())
}

/// (batch, seq, head) rows of `out` that hold any NaN.
fn nan_rows(out: &Tensor) -> Result<Vec<(usize, usize, usize)>> {
    let (b, s, h, d) = out.dims4()?;
    let data = to_f64_vec(out)?;
    let mut rows = Vec::new();
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                let start = ((bi * s + si) * h + hi) * d;
                if data[start..start + d].iter().any(|x| x.is_nan()) {
                    rows.push((bi, si, hi));
                }
            }
        }
    }
    Ok(rows)
}

/// NaN in one query row reaches exactly that row's output (GQA heads share a block).
#[test]
fn gpu_nan_in_a_query_row_stays_in_that_row() -> Result<()> {
    let Some(dev) = cuda_device("gpu_nan_in_a_query_row_stays_in_that_row") else { return Ok(()) };
    let seed = fresh_seed("gpu_nan_in_a_query_row_stays_in_that_row");
    for (i, (dtype, sq, causal)) in
        [(DType::BF16, 37, false), (DType::F16, 130, true), (DType::F32, 3, true)].into_iter().enumerate()
    {
        let case = Case::plain(case_seed(seed, i), (2, 8, 2, sq, 300, 64));
        let (q, k, v, _) = case.inputs(&dev, dtype)?;
        let p = AttnParams::new(0.125).causal(causal);
        let target = (1, sq / 2, 5);
        let out = attention(&with_nan_row(&q, target)?, &k, &v, &p)?;
        assert_eq!(nan_rows(&out)?, vec![target], "{dtype:?} sq {sq} causal {causal}");
    }
    Ok(())
}

/// NaN in one key reaches exactly the rows that see it: causal, sq = sk, rows i ≥ j of the
/// q heads reading that kv head (and, with a left window, only up to j + window).
#[test]
fn gpu_nan_in_a_key_reaches_only_rows_that_see_it() -> Result<()> {
    let Some(dev) = cuda_device("gpu_nan_in_a_key_reaches_only_rows_that_see_it") else { return Ok(()) };
    let seed = fresh_seed("gpu_nan_in_a_key_reaches_only_rows_that_see_it");
    let (s, h, hkv, j, kvh) = (700, 4, 2, 300, 1);
    for (i, dtype) in [DType::BF16, DType::F16, DType::F32].into_iter().enumerate() {
        let case = Case::plain(case_seed(seed, i), (1, h, hkv, s, s, 64));
        let (q, k, v, _) = case.inputs(&dev, dtype)?;
        let k_nan = with_nan_row(&k, (0, j, kvh))?;
        for window_left in [None, Some(100)] {
            let p = AttnParams::new(0.125).causal(true).window(window_left, Some(0));
            let out = attention(&q, &k_nan, &v, &p)?;
            let sees =
                |si: usize, hi: usize| hi / (h / hkv) == kvh && si >= j && window_left.is_none_or(|l| si <= j + l);
            let expected: Vec<_> =
                (0..s).flat_map(|si| (0..h).map(move |hi| (0, si, hi))).filter(|&(_, si, hi)| sees(si, hi)).collect();
            assert_eq!(nan_rows(&out)?, expected, "{dtype:?} window_left {window_left:?}");
        }
    }
    Ok(())
}

/// Compares with PyTorch float64 SDPA on the cases scripts/torch_oracle.py wrote, with the
/// same rule as every other check (torch's output in place of `attention_ref` in f64).
#[test]
fn gpu_torch_oracle() -> Result<()> {
    let Some(dev) = cuda_device("gpu_torch_oracle") else { return Ok(()) };
    let Ok(dir) = std::env::var("FUSED_ATTN_ORACLE_DIR") else {
        println!(
            "SKIPPED: gpu_torch_oracle: FUSED_ATTN_ORACLE_DIR is not set (scripts/torch_oracle.py writes the files)"
        );
        return Ok(());
    };
    let mut paths: Vec<_> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "gpu_torch_oracle: no .safetensors files in {dir}");
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
        let tensors = candle_core::safetensors::load(path, &dev)?;
        let get = |key: &str| {
            tensors
                .get(key)
                .cloned()
                .ok_or_else(|| candle_core::Error::Msg(format!("{}: no tensor {key}", path.display())))
        };
        let (q, k, v, torch_out) = (get("q")?, get("k")?, get("v")?, get("out")?);
        // [softmax_scale, causal, window_left, window_right], -1 = unbounded.
        let meta = get("params")?.to_vec1::<f64>()?;
        let window = |x: f64| (x >= 0.0).then_some(x as usize);
        let mut p = AttnParams::new(meta[0] as f32).causal(meta[1] != 0.0).window(window(meta[2]), window(meta[3]));
        if let Some(slopes) = tensors.get("alibi_slopes") {
            p = p.alibi_slopes(slopes);
        }
        poison_for(&dev, &q)?;
        let fused = attention(&q, &k, &v, &p)?;
        let naive = attention_ref(&q, &k, &v, &p)?;
        let floor_inputs = FloorInputs::new(&q, &k, &v, &torch_out, p.softmax_scale)?;
        let r = measure_with(q.dtype(), &fused, &naive, &torch_out, &floor_inputs)?;
        let line = format!(
            "{name:34} {:?} {:?}: fused err {:.3e}, naive err {:.3e}, allowed {:.3e}, fused rel-L2 {:.2e}",
            q.dims(),
            q.dtype(),
            r.fused_max_abs,
            r.naive_max_abs,
            r.allowed(),
            r.fused_rel_l2
        );
        println!("gpu_torch_oracle: {line}{}", if r.passes() { "" } else { "  FAIL" });
        if !r.passes() {
            failures.push(line);
        }
    }
    println!("gpu_torch_oracle: {} cases from {dir}, {} failed", paths.len(), failures.len());
    assert!(
        failures.is_empty(),
        "gpu_torch_oracle: {} of {} failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
    Ok(())
}

/// Small enough for compute-sanitizer memcheck and racecheck: a few shapes (odd sizes, GQA,
/// decode) per dtype and mask kind. The naive path runs on the CPU, so only our kernels
/// (and the poison fill) run on the GPU under the sanitizer.
#[test]
fn gpu_sanitizer_subset() {
    let Some(dev) = cuda_device("gpu_sanitizer_subset") else { return };
    let seed = fresh_seed("gpu_sanitizer_subset");
    let mut cases = Vec::new();
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let shapes = [
            (1, 2, 1, 17, 33, 64),
            (1, 4, 2, 70, 70, 128),
            (2, 8, 2, 1, 300, 128),
            (1, 2, 2, 5, 129, 40),   // padded head dim
            (1, 4, 4, 130, 61, 256), // sq > sk: empty rows
            (1, 8, 2, 3, 4097, 128), // decode long enough to split the keys
            (1, 2, 1, 65, 200, 32),
            (1, 4, 1, 16, 2049, 96),
            (1, 2, 1, 200, 300, 64), // Hopper: small grids split over block pairs (f16/bf16),
            (1, 2, 1, 150, 200, 64), // three and two key blocks
            (1, 2, 1, 256, 256, 64), // causal: the top tile's one key block leaves rank 1 of its pair none
            (1, 8, 2, 1, 4097, 128), // Hopper decode: 4-row tiles over 16 splits, per-warp partials
            (1, 8, 1, 1, 1000, 64),  // the same at d64: 8-row tiles, 4 splits
        ];
        for shape in shapes {
            for mask in 0..4 {
                let mut c = Case::plain(case_seed(seed, cases.len()), shape);
                match mask {
                    0 => {}
                    1 => c.causal = true,
                    2 => (c.window_left, c.window_right) = (Some(7), Some(3)),
                    _ => (c.causal, c.alibi, c.softcap) = (true, Alibi::PerHead, Some(20.0)),
                }
                cases.push((dtype, c));
            }
        }
        // Hopper (f16/bf16), 132 SMs: 136 d128 tiles, unmasked, so that the plain d128
        // instance's strided grid cuts the last round's 4 tiles into 3 pieces of key blocks.
        if dtype != DType::F32 {
            cases.push((dtype, Case::plain(case_seed(seed, cases.len()), (1, 17, 17, 1000, 300, 128))));
        }
    }
    check_all("gpu_sanitizer_subset", &dev, &cases, true);
    // The backward kernels on a few of the same shapes (the naive gradients run on the GPU
    // too here, under the sanitizer: keep them small).
    let mut failed = 0;
    for (dtype, case) in cases.iter().filter(|(_, c)| c.work() <= 1 << 20) {
        poison_for(&dev, &Tensor::zeros((case.batch, case.seq_q, case.heads, case.head_dim), *dtype, &dev).unwrap())
            .unwrap();
        let results = common::grad::check_grad_case(case, &dev, *dtype).expect("grad case ran");
        if results.iter().any(|r| !r.passes()) {
            failed += 1;
            println!("FAIL grad {dtype:?} {case:?}: {results:?}");
        }
    }
    assert_eq!(failed, 0, "{failed} backward cases failed in the sanitizer subset");
}

/// A sweep's failing gradient case again, with its worst elements printed:
/// `FUSED_ATTN_GRAD_CASE=<case seed> [FUSED_ATTN_GRAD_DTYPE=f16] cargo test --release --features
/// cuda --test gpu gpu_grad_case -- --ignored --nocapture` (both backward routes: autograd
/// through `attention`, and `attention_backward` on the forward's output and LSE).
#[test]
#[ignore = "a tool: FUSED_ATTN_GRAD_CASE=<case seed> reruns one gradient case"]
fn gpu_grad_case() {
    let Some(dev) = cuda_device("gpu_grad_case") else { return };
    let (case, dtype) = common::grad::grad_case_from_env().expect("FUSED_ATTN_GRAD_CASE=<case seed>");
    for explicit in [false, true] {
        common::grad::print_grad_case(&case, &dev, dtype, explicit, 6).expect("grad case ran");
    }
}

fn grad_sweep(test: &str, dtype: DType) {
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let poison = |case: &Case| -> Result<()> {
        let elems = case.batch * (case.seq_q * case.heads + 2 * case.seq_k * case.kv_heads) * case.head_dim;
        poison_pool(&dev, (16 * elems * 4).max(1 << 20))
    };
    let failures = common::grad::run_grad_sweep_with(&dev, dtype, 200, seed, &poison).expect("grad sweep ran");
    assert_eq!(failures, 0, "{test}: {failures} gradient cases failed (printed above; seed {seed})");
}

#[test]
fn gpu_grad_sweep_f32() {
    grad_sweep("gpu_grad_sweep_f32", DType::F32)
}

#[test]
fn gpu_grad_sweep_f16() {
    grad_sweep("gpu_grad_sweep_f16", DType::F16)
}

#[test]
fn gpu_grad_sweep_bf16() {
    grad_sweep("gpu_grad_sweep_bf16", DType::BF16)
}

#[test]
fn gpu_lse() {
    let Some(dev) = cuda_device("gpu_lse") else { return };
    let seed = fresh_seed("gpu_lse");
    let mut failures = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for i in 0..100 {
            let case = Case::random(case_seed(seed, i), &Limits::gpu());
            let (err, allowed) = common::grad::check_lse_case(&case, &dev, dtype).expect("lse case ran");
            if err > allowed {
                failures += 1;
                println!("FAIL gpu lse {dtype:?}: error {err:.3e} > allowed {allowed:.3e}: {case:?}");
            }
        }
    }
    // Persistent grids' shapes: on the Hopper kernel, strided and drawn tiles, and causal
    // tiles moved up by the partial tile's padding (whose rows above 0 write no LSE).
    for (dtype, case) in persistent_cases(seed, 300) {
        let (err, allowed) = common::grad::check_lse_case(&case, &dev, dtype).expect("lse case ran");
        if err > allowed {
            failures += 1;
            println!("FAIL gpu lse (persistent shape) {dtype:?}: error {err:.3e} > allowed {allowed:.3e}: {case:?}");
        }
    }
    assert_eq!(failures, 0, "{failures} LSE cases failed (printed above; seed {seed})");
}

/// The Hopper backward main kernel (kernels/bwd_sm90.cu): random dense gradient cases in f16
/// and bf16 with the head dims it covers (multiples of 8 up to 128, smaller ones zero-padded),
/// every mask, softcap, ALiBi, GQA/MQA and input layout, each run twice on one GPU: on the
/// default kernels and forced onto the sm_80 kernels, dq/dk/dv against the f64 oracle. The
/// default run must take the Hopper main kernel for every contiguous or head-major case, and
/// for at least a third of all cases, so that the test cannot pass on the sm_80 kernel alone.
/// Skips (with a message) on GPUs other than 9.0.
#[test]
fn gpu_hopper_backward() {
    let test = "gpu_hopper_backward";
    let Some(dev) = cuda_device(test) else { return };
    // Probe: a dense bf16 d128 backward takes the Hopper main kernel exactly on 9.0 GPUs.
    let probe = Tensor::ones((1, 130, 2, 128), DType::BF16, &dev).unwrap();
    let (o, lse) = attention_with_lse(&probe, &probe, &probe, &AttnParams::new(0.1)).unwrap();
    take_last_backward_kernel();
    attention_backward(&probe, &probe, &probe, &o, &probe, &lse, &AttnParams::new(0.1)).unwrap();
    let probe_kernel = take_last_backward_kernel().unwrap_or("none");
    if !probe_kernel.ends_with("_sm90") {
        println!("SKIPPED: {test}: the device is not compute capability 9.0 (a bf16 d128 backward ran {probe_kernel})");
        return;
    }
    let seed = fresh_seed(test);
    let limits = common::grad::grad_limits();
    // The Hopper backward's instances stop at 128 (larger head dims run the sm_80 kernel).
    const DIMS: [usize; 8] = [8, 40, 64, 72, 96, 104, 120, 128];
    // FUSED_ATTN_HOPPER_CASES=N runs fewer (compute-sanitizer runs of this test).
    let n = std::env::var("FUSED_ATTN_HOPPER_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(160);
    let (mut failures, mut hopper_runs) = (Vec::new(), 0usize);
    let mut worst = (0.0f64, String::new());
    let start = std::time::Instant::now();
    for i in 0..n {
        let mut case = Case::random(case_seed(seed, i), &limits);
        case.head_dim = DIMS[i % DIMS.len()];
        let dtype = if i % 2 == 0 { DType::BF16 } else { DType::F16 };
        let describable =
            case.layouts.iter().all(|l| matches!(l, common::InputLayout::Contiguous | common::InputLayout::HeadsMajor));
        for kernels in [CudaKernels::Auto, CudaKernels::Sm80] {
            take_last_backward_kernel();
            let results = with_cuda_kernels(kernels, || common::grad::check_grad_case(&case, &dev, dtype))
                .unwrap_or_else(|e| panic!("{test}: {dtype:?} {case:?} {kernels:?}: error {e}"));
            let ran = take_last_backward_kernel().unwrap_or("no backward kernel");
            let what = format!("{dtype:?} {} (case seed {}) {kernels:?} ran {ran}", describe(&case), case.seed);
            let hopper = ran.ends_with("_sm90");
            if kernels == CudaKernels::Sm80 && hopper {
                failures.push(format!("{what}: forced sm80 but ran the Hopper kernel"));
            }
            if kernels == CudaKernels::Auto {
                if hopper {
                    hopper_runs += 1;
                } else if describable && ran != "no backward kernel" {
                    failures.push(format!("{what}: should have run the Hopper kernel"));
                }
            }
            for r in &results {
                let ratio = r.fused_max_abs / r.allowed();
                if ratio > worst.0 {
                    worst = (ratio, format!("{what} {}", r.name));
                }
                if !r.passes() {
                    let line = format!("{what}: {r:?}, allowed {:.3e}", r.allowed());
                    println!("{test}: FAIL {line}");
                    failures.push(line);
                }
            }
        }
    }
    println!(
        "{test}: {n} cases × 2 kernel generations, {hopper_runs} on the Hopper kernel, {} failures; worst \
         error/allowed {:.3} at {}; {:.1} s",
        failures.len(),
        worst.0,
        worst.1,
        start.elapsed().as_secs_f64()
    );
    assert!(hopper_runs * 3 >= n, "{test}: only {hopper_runs} of {n} cases ran the Hopper kernel");
    assert!(failures.is_empty(), "{test}: {} failures:\n{}", failures.len(), failures.join("\n"));
}

// ---- packed (varlen) and paged batches ----------------------------------------------------

/// A random packed batch: sequence lengths, K/V packed or paged (shuffled block table in a
/// pool larger than needed), multimodal prefix ranges, every mask and score feature, and
/// strided q/k/v views.
#[derive(Debug, Clone)]
struct VarCase {
    seed: u64,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    len_q: Vec<usize>,
    len_k: Vec<usize>,
    /// Keys per page; `None`: k/v packed.
    page: Option<usize>,
    /// Paged caches as `(blocks · page, kv_heads, d)` instead of `(blocks, page, kv_heads, d)`.
    flat_pages: bool,
    /// Per sequence, `[start, end)` prefix ranges (padded with empty ones).
    ranges: Option<Vec<Vec<[i32; 2]>>>,
    causal: bool,
    window: (Option<usize>, Option<usize>),
    softcap: Option<f32>,
    /// 0 none, 1 per head, 2 per (sequence, head).
    alibi: u8,
    /// q/k/v rows as views of wider rows (extra heads and/or padded head dim).
    strided: bool,
}

impl VarCase {
    fn random(seed: u64) -> Self {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(seed);
        let batch = rng.random_range(1..=6);
        let (heads, kv_heads) =
            *[(1, 1), (2, 1), (4, 2), (4, 4), (8, 2), (6, 3), (8, 1)].get(rng.random_range(0..7)).unwrap();
        let dims = [8, 16, 24, 32, 40, 64, 72, 96, 128, 136, 192, 256, 264, 320, 384, 512];
        let head_dim = dims[rng.random_range(0..dims.len())];
        // 0: prefill, 1: decode (1..16 queries against longer caches), 2: mixed.
        let mode = rng.random_range(0..3);
        let long = if head_dim > 256 { 600 } else { 2500 };
        let mut len_q = Vec::new();
        let mut len_k = Vec::new();
        for _ in 0..batch {
            let decode = mode == 1 || (mode == 2 && rng.random_bool(0.5));
            let edge = rng.random_range(0..10);
            let (lq, lk) = if edge == 0 {
                (0, rng.random_range(0..50))
            } else if edge == 1 {
                (rng.random_range(1..40), 0)
            } else if edge == 2 {
                (1, 1)
            } else if decode {
                (rng.random_range(1..=16), rng.random_range(1..long))
            } else {
                let lq = rng.random_range(1..300);
                let lk = if rng.random_bool(0.7) { lq + rng.random_range(0..200) } else { rng.random_range(1..400) };
                (lq, lk)
            };
            len_q.push(lq);
            len_k.push(lk);
        }
        let page = match rng.random_range(0..7) {
            0 => Some(16),
            1 => Some(32),
            2 => Some(256),
            3 => Some(rng.random_range(1..40)),
            4 => Some(64),
            _ => None,
        };
        let ranges = rng.random_bool(0.3).then(|| {
            let n = rng.random_range(1..=3);
            len_k
                .iter()
                .map(|&lk| {
                    (0..n)
                        .map(|_| {
                            if lk == 0 || rng.random_bool(0.2) {
                                return [0, 0];
                            }
                            match rng.random_range(0..4) {
                                0 => [0, rng.random_range(1..=lk) as i32],
                                1 => [rng.random_range(0..lk) as i32, lk as i32],
                                _ => {
                                    let s = rng.random_range(0..lk);
                                    [s as i32, rng.random_range(s + 1..=lk) as i32]
                                }
                            }
                        })
                        .collect()
                })
                .collect()
        });
        let (causal, window) = match rng.random_range(0..5) {
            0 => (false, (None, None)),
            1 => (true, (None, None)),
            2 => (true, (Some(rng.random_range(0..64)), Some(0))),
            3 => (false, (Some(rng.random_range(0..40)), Some(rng.random_range(0..40)))),
            _ => (false, (None, Some(rng.random_range(0..8)))),
        };
        VarCase {
            seed,
            heads,
            kv_heads,
            head_dim,
            len_q,
            len_k,
            page,
            flat_pages: rng.random_bool(0.3),
            ranges,
            causal,
            window,
            softcap: rng.random_bool(0.2).then(|| rng.random_range(5.0..40.0)),
            alibi: rng.random_range(0..5).min(2),
            strided: rng.random_bool(0.3),
        }
    }

    fn describe(&self) -> String {
        format!(
            "(h{},hkv{},d{}) lq {:?} lk {:?} page {:?}{} ranges {:?} causal {} window {:?} softcap {:?} alibi {} strided {}",
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.len_q,
            self.len_k,
            self.page,
            if self.flat_pages { " (flat)" } else { "" },
            self.ranges,
            self.causal,
            self.window,
            self.softcap,
            self.alibi,
            self.strided
        )
    }

    /// q, k, v (CPU, `dtype`), the varlen description (CPU index tensors) and the params.
    fn inputs(&self, dtype: DType) -> Result<(Tensor, Tensor, Tensor, candle_fused_attn::Varlen, AttnParams)> {
        use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x5eed);
        let dev = Device::Cpu;
        let (h, hk, d) = (self.heads, self.kv_heads, self.head_dim);
        let batch = self.len_q.len();
        let total_q: usize = self.len_q.iter().sum();
        let cum = |l: &[usize]| {
            let mut c = vec![0u32];
            for &x in l {
                c.push(c.last().unwrap() + x as u32);
            }
            c
        };
        let randn = |rng: &mut StdRng, shape: &[usize]| -> Result<Tensor> {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|_| {
                    let (a, b): (f32, f32) = (rng.random_range(1e-7..1.0), rng.random());
                    (-2.0 * a.ln()).sqrt() * (std::f32::consts::TAU * b).cos()
                })
                .collect();
            Tensor::from_vec(data, shape, &dev)?.to_dtype(dtype)
        };
        // A rows × heads × d tensor, as a view of wider rows when strided.
        let make = |rng: &mut StdRng, lead: &[usize], heads: usize| -> Result<Tensor> {
            let r = lead.len();
            if self.strided {
                let mut shape = lead.to_vec();
                shape.extend([heads + 1, d + 3]);
                randn(rng, &shape)?.narrow(r, 1, heads)?.narrow(r + 1, 0, d)
            } else {
                let mut shape = lead.to_vec();
                shape.extend([heads, d]);
                randn(rng, &shape)
            }
        };
        let q = make(&mut rng, &[total_q], h)?;
        let cu_q = Tensor::new(cum(&self.len_q).as_slice(), &dev)?;
        let cu_k = Tensor::new(cum(&self.len_k).as_slice(), &dev)?;
        let max_q = self.len_q.iter().copied().max().unwrap_or(0);
        let max_k = self.len_k.iter().copied().max().unwrap_or(0);
        let (k, v, mut varlen) = match self.page {
            None => {
                let total_k: usize = self.len_k.iter().sum();
                let (k, v) = (make(&mut rng, &[total_k], hk)?, make(&mut rng, &[total_k], hk)?);
                (k, v, candle_fused_attn::Varlen::new(&cu_q, &cu_k, max_q, max_k))
            }
            Some(page) => {
                let used: Vec<usize> = self.len_k.iter().map(|l| l.div_ceil(page)).collect();
                let max_blocks = used.iter().copied().max().unwrap_or(0) + rng.random_range(0..2);
                let pool = used.iter().sum::<usize>() + rng.random_range(1..4);
                let mut ids: Vec<u32> = (0..pool as u32).collect();
                ids.shuffle(&mut rng);
                let mut table = vec![0u32; batch * max_blocks];
                let mut next = 0;
                for (b, &u) in used.iter().enumerate() {
                    for j in 0..u {
                        table[b * max_blocks + j] = ids[next];
                        next += 1;
                    }
                    // Unused entries: anything (never read).
                    for j in u..max_blocks {
                        table[b * max_blocks + j] = rng.random_range(0..pool as u32);
                    }
                }
                let table = Tensor::from_vec(table, (batch, max_blocks), &dev)?;
                let (k, v) = if self.flat_pages {
                    (make(&mut rng, &[pool * page], hk)?, make(&mut rng, &[pool * page], hk)?)
                } else {
                    (make(&mut rng, &[pool, page], hk)?, make(&mut rng, &[pool, page], hk)?)
                };
                (k, v, candle_fused_attn::Varlen::new(&cu_q, &cu_k, max_q, max_k).paged(&table, page))
            }
        };
        if let Some(ranges) = &self.ranges {
            let n = ranges[0].len();
            let flat: Vec<i32> = ranges.iter().flatten().flatten().copied().collect();
            varlen = varlen.mm_prefix_ranges(&Tensor::from_vec(flat, (batch, n, 2), &dev)?);
        }
        let mut p = AttnParams::new(1.0 / (d as f32).sqrt()).causal(self.causal);
        if self.window != (None, None) {
            p = p.window(self.window.0, self.window.1);
        }
        if let Some(c) = self.softcap {
            p = p.softcap(c);
        }
        let slopes = |n: usize| -> Result<Tensor> {
            Tensor::from_vec((0..n).map(|i| 0.05 + 0.3 * (i % 7) as f32 / 7.0).collect::<Vec<_>>(), n, &dev)
        };
        match self.alibi {
            1 => p = p.alibi_slopes(&slopes(h)?),
            2 => p = p.alibi_slopes(&slopes(batch * h)?.reshape((batch, h))?),
            _ => {}
        }
        Ok((q, k, v, varlen, p))
    }
}

/// The varlen index tensors and slopes of `vl`/`p` moved to `dev`.
fn varlen_to(
    dev: &Device,
    vl: &candle_fused_attn::Varlen,
    p: &AttnParams,
) -> Result<(candle_fused_attn::Varlen, AttnParams)> {
    let mut vd = vl.clone();
    vd.seqlens_q = vl.seqlens_q.to_device(dev)?;
    vd.seqlens_k = vl.seqlens_k.to_device(dev)?;
    vd.block_table = vl.block_table.as_ref().map(|t| t.to_device(dev)).transpose()?;
    vd.mm_prefix_ranges = vl.mm_prefix_ranges.as_ref().map(|t| t.to_device(dev)).transpose()?;
    let mut pd = p.clone();
    pd.alibi_slopes = p.alibi_slopes.as_ref().map(|s| s.to_device(dev)).transpose()?;
    Ok((vd, pd))
}

fn rank4(t: &Tensor) -> Result<Tensor> {
    if t.rank() == 3 {
        t.unsqueeze(0)
    } else {
        Ok(t.clone())
    }
}

/// A varlen case's CPU side: inputs in its dtype, the naive reference in that dtype, the f64
/// oracle on the upcast inputs (and its LSE when wanted).
struct VarPrepared {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    vl: candle_fused_attn::Varlen,
    p: AttnParams,
    naive: Tensor,
    oracle: Tensor,
    lse_oracle: Option<Tensor>,
}

fn prepare_varlen(dtype: DType, case: &VarCase, with_lse: bool) -> Result<VarPrepared> {
    use candle_fused_attn::{attention_ref_varlen, attention_ref_varlen_lse};
    let (q, k, v, vl, p) = case.inputs(dtype)?;
    let up = |t: &Tensor| t.to_dtype(DType::F64);
    let (q64, k64, v64) = (up(&q)?, up(&k)?, up(&v)?);
    let oracle = attention_ref_varlen(&q64, &k64, &v64, &vl, &p)?;
    let lse_oracle = if with_lse { Some(attention_ref_varlen_lse(&q64, &k64, &v64, &vl, &p)?) } else { None };
    let naive = attention_ref_varlen(&q, &k, &v, &vl, &p)?;
    Ok(VarPrepared { q, k, v, vl, p, naive, oracle, lse_oracle })
}

/// One prepared varlen case on `dev`: ours into poisoned memory (and its LSE when prepared)
/// against the f64 oracle, with the crate's tolerance rule (the naive reference in the same
/// dtype ran on the CPU).
fn check_varlen(dev: &Device, dtype: DType, case: &VarCase, prep: &VarPrepared) -> Result<CaseResult> {
    use candle_fused_attn::{attention_varlen, attention_varlen_with_lse};
    let VarPrepared { q, k, v, vl, p, naive, oracle, lse_oracle } = prep;
    let (qd, kd, vd) = (q.to_device(dev)?, k.to_device(dev)?, v.to_device(dev)?);
    let (vld, pd) = varlen_to(dev, vl, p)?;
    poison_for(dev, &kd)?;
    poison_for(dev, &qd)?;
    let fused = match lse_oracle {
        Some(want) => {
            let (out, lse) = attention_varlen_with_lse(&qd, &kd, &vd, &vld, &pd)?;
            let (got, want) = (to_f64_vec(&lse)?, to_f64_vec(want)?);
            assert_eq!(got.len(), want.len(), "lse length");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let ok = if w.is_finite() { (g - w).abs() <= 1e-3 * (1.0 + w.abs()) } else { g == w };
                assert!(ok, "lse[{i}] = {g}, oracle {w}: {dtype:?} {} (case seed {})", case.describe(), case.seed);
            }
            out
        }
        None => attention_varlen(&qd, &kd, &vd, &vld, &pd)?,
    };
    // Which stream read the GPU-resident index tensors (src/cuda/indices.rs): every one on the
    // side stream on a device of its own stream, none on candle's default device.
    let gpu_indices = 2 + usize::from(vld.block_table.is_some()) + usize::from(vld.mm_prefix_ranges.is_some());
    assert_eq!(
        candle_fused_attn::take_last_side_index_reads(),
        Some(if own_stream_devices() { gpu_indices } else { 0 }),
        "index tensors read on the side stream: {dtype:?} {} (case seed {})",
        case.describe(),
        case.seed
    );
    assert_eq!((fused.dims(), fused.dtype()), (q.dims(), dtype), "fused output shape and dtype");
    let floor_inputs = FloorInputs::new(&rank4(q)?, &rank4(k)?, &rank4(v)?, &rank4(oracle)?, p.softmax_scale)?;
    measure_with(dtype, &fused, naive, oracle, &floor_inputs)
}

/// Checks every (dtype, case), prints each failure with its seed, fails if any did. The CPU
/// side of [`PREPARE_AHEAD`] cases at a time runs in parallel.
fn check_all_varlen(test: &str, dev: &Device, cases: &[(DType, VarCase)]) {
    check_all_varlen_on(test, dev, cases, &[CudaKernels::Auto]);
}

/// [`check_all_varlen`], each case once per kernel generation of `generations`; returns how many
/// default runs launched the decode's separate combine.
fn check_all_varlen_on(test: &str, dev: &Device, cases: &[(DType, VarCase)], generations: &[CudaKernels]) -> usize {
    let mut tally = CaseTally::new();
    for (c, chunk) in cases.chunks(PREPARE_AHEAD * 2).enumerate() {
        let prepared: Vec<_> = chunk
            .par_iter()
            .enumerate()
            .map(|(i, (dtype, case))| prepare_varlen(*dtype, case, (c * PREPARE_AHEAD * 2 + i).is_multiple_of(4)))
            .collect();
        for ((dtype, case), prep) in chunk.iter().zip(prepared) {
            let prep = prep.unwrap_or_else(|e| {
                panic!("{test}: {dtype:?} {} (case seed {}): error {e}", case.describe(), case.seed)
            });
            for &kernels in generations {
                let what = format!("{dtype:?} {} (case seed {}) {kernels:?}", case.describe(), case.seed);
                tally.run(test, &what, kernels, || check_varlen(dev, *dtype, case, &prep));
            }
        }
    }
    tally.finish(test, cases.len(), generations.len())
}

const VARLEN_CASES: usize = 250;

fn varlen_sweep(test: &str, dtype: DType) {
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let cases: Vec<_> = (0..VARLEN_CASES).map(|i| (dtype, VarCase::random(case_seed(seed, i)))).collect();
    check_all_varlen(test, &dev, &cases);
}

#[test]
fn gpu_varlen_sweep_f32() {
    varlen_sweep("gpu_varlen_sweep_f32", DType::F32);
}
#[test]
fn gpu_varlen_sweep_f16() {
    varlen_sweep("gpu_varlen_sweep_f16", DType::F16);
}
#[test]
fn gpu_varlen_sweep_bf16() {
    varlen_sweep("gpu_varlen_sweep_bf16", DType::BF16);
}

/// Paged decode and mixed prefill/decode batches: pages 16, 32, 256 and odd sizes, long
/// caches (splits), GQA, every mask kind.
#[test]
fn gpu_varlen_paged_decode() {
    let Some(dev) = cuda_device("gpu_varlen_paged_decode") else { return };
    let seed = fresh_seed("gpu_varlen_paged_decode");
    let mut cases = Vec::new();
    for (i, dtype) in [DType::BF16, DType::F16, DType::F32].into_iter().enumerate() {
        for page in [16, 32, 256, 7] {
            for mask in 0..3 {
                for mixed in [false, true] {
                    let s = case_seed(seed, cases.len());
                    let mut c = VarCase::random(s);
                    // The head shapes in turn (from a seeded start), so that each is a third of
                    // every dtype's cases: the combine's coverage below does not hang on the draw.
                    let turn = (cases.len() + (seed % 3) as usize) % 3;
                    (c.heads, c.kv_heads, c.head_dim) = [(32, 8, 128), (8, 1, 64), (4, 4, 256)][turn];
                    c.len_q = vec![1, 4, 16, 2, 1];
                    c.len_k = vec![4097 + i, 1, 3000, 17, 8192];
                    if mixed {
                        c.len_q[1] = 200;
                        c.len_k[1] = 333;
                    }
                    c.page = Some(page);
                    c.strided = false;
                    c.ranges = (mask == 2).then(|| vec![vec![[0, 1]]; 5]);
                    (c.causal, c.window, c.softcap, c.alibi) = match mask {
                        0 => (false, (None, None), None, 0),
                        1 => (true, (None, None), None, 2),
                        _ => (true, (Some(700), Some(0)), Some(30.0), 1),
                    };
                    cases.push((dtype, c));
                }
            }
        }
    }
    let combine_runs =
        check_all_varlen_on("gpu_varlen_paged_decode", &dev, &cases, &[CudaKernels::Auto, CudaKernels::Sm80]);
    // Which cases split their keys: the mixed half (a 200-row prefill sequence) runs the prefill
    // kernel, and the (32, 8, 128) third of the rest fills the GPU's blocks with one split
    // (160 tiles of 16 rows); the other 24 split. With the heads drawn at random that was 23-31
    // (session 24 call 1: 23, a failure); in turn it is at least those 24, a third (H200,
    // session 24: 30 and 24).
    if decode_combine_launches(&dev).expect("decode probe ran") {
        assert!(
            combine_runs * 3 >= cases.len(),
            "gpu_varlen_paged_decode: only {combine_runs} of {} cases launched the combine",
            cases.len()
        );
    }
}

/// Index uploads are reused only for equal values (src/packed.rs `uploaded`): two paged decode
/// batches of one shape whose block tables differ (another shuffle of another pool), called in
/// turn A, A, B, B, A, each against the f64 oracle. A reused table of the other batch would
/// read the wrong pages.
#[test]
fn gpu_packed_index_reuse() -> Result<()> {
    let Some(dev) = cuda_device("gpu_packed_index_reuse") else { return Ok(()) };
    let seed = fresh_seed("gpu_packed_index_reuse");
    let make = |i: usize| {
        let mut c = VarCase::random(case_seed(seed, i));
        (c.heads, c.kv_heads, c.head_dim) = (8, 2, 128);
        (c.len_q, c.len_k) = (vec![1, 1, 1], vec![300, 1000, 77]);
        (c.page, c.flat_pages, c.strided, c.ranges) = (Some(16), false, false, None);
        (c.causal, c.window, c.softcap, c.alibi) = (false, (None, None), None, 0);
        c
    };
    let (a, mut b) = (make(0), make(1));
    let prep_a = prepare_varlen(DType::BF16, &a, false)?;
    let mut prep_b = prepare_varlen(DType::BF16, &b, false)?;
    let table = |p: &VarPrepared| p.vl.block_table.as_ref().expect("paged").flatten_all()?.to_vec1::<u32>();
    for i in 2.. {
        if table(&prep_a)? != table(&prep_b)? {
            break;
        }
        // The same shuffle by chance (one pool size in three draws): another draw.
        b = make(i);
        prep_b = prepare_varlen(DType::BF16, &b, false)?;
    }
    for (name, case, prep) in
        [("A", &a, &prep_a), ("A", &a, &prep_a), ("B", &b, &prep_b), ("B", &b, &prep_b), ("A", &a, &prep_a)]
    {
        let r = check_varlen(&dev, DType::BF16, case, prep)?;
        assert!(r.passes(), "batch {name} after another batch's upload: {r:?} (seed {seed})");
    }
    Ok(())
}

/// Index tensors on the GPU are read for their checks on a stream of their own
/// (src/cuda/indices.rs), which must still wait for the kernel that wrote them. Here that
/// kernel (a cast to u32 of values uploaded as f32) is queued on candle's stream behind two
/// 4096² f32 matmuls, into memory that held all-ones bits (u32::MAX) just before: a read that
/// did not wait for the cast would see the poison and fail the checks, or see other values and
/// give other rows. A paged decode batch whose cumulative lengths and block table are made
/// that way must equal, bit for bit, the same call with the indices on the CPU, five times.
///
/// The side read applies where cudarc orders streams by events: a device of its own stream
/// (`Device::new_cuda_with_stream`), which must read all three tensors there; candle's default
/// device (the per-thread stream, cudarc's single-stream mode) reads them on its stream and
/// must read none on the side. Both run here.
#[test]
fn gpu_device_indices_wait_for_their_writer() -> Result<()> {
    let name = "gpu_device_indices_wait_for_their_writer";
    let Some(default_dev) = cuda_device(name) else { return Ok(()) };
    device_indices_wait_for_their_writer(&default_dev, "default device", 0)?;
    let own = Device::new_cuda_with_stream(0)?;
    device_indices_wait_for_their_writer(&own, "device with its own stream", 3)
}

fn device_indices_wait_for_their_writer(dev: &Device, kind: &str, side_reads: usize) -> Result<()> {
    use candle_fused_attn::{attention_varlen, take_last_side_index_reads, Varlen};
    use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
    let dev = dev.clone();
    let seed = fresh_seed("gpu_device_indices_wait_for_their_writer");
    let mut rng = StdRng::seed_from_u64(seed);
    let (h, hkv, d, page) = (8, 2, 128, 16);
    let lens_k = [700usize, 33, 1500, 256, 1];
    let batch = lens_k.len();
    let blocks: Vec<usize> = lens_k.iter().map(|l| l.div_ceil(page)).collect();
    let max_blocks = *blocks.iter().max().expect("a sequence");
    // A pool larger than needed, its pages handed out in a shuffled order.
    let num_blocks = blocks.iter().sum::<usize>() + 7;
    let mut pool: Vec<u32> = (0..num_blocks as u32).collect();
    pool.shuffle(&mut rng);
    let mut table = vec![0u32; batch * max_blocks];
    let mut next = pool.into_iter();
    for (b, &n) in blocks.iter().enumerate() {
        for j in 0..n {
            table[b * max_blocks + j] = next.next().expect("pool larger than the pages");
        }
    }
    let cu = |lens: &[usize]| -> Vec<u32> {
        std::iter::once(0)
            .chain(lens.iter().scan(0u32, |s, &l| {
                *s += l as u32;
                Some(*s)
            }))
            .collect()
    };
    let (cu_q, cu_k) = (cu(&vec![1; batch]), cu(&lens_k));
    let q = Tensor::randn(0f32, 1.0, (batch, h, d), &dev)?.to_dtype(DType::BF16)?;
    let k = Tensor::randn(0f32, 1.0, (num_blocks, page, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let v = Tensor::randn(0f32, 1.0, (num_blocks, page, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let params = AttnParams::new(1.0 / (d as f32).sqrt()).causal(true);
    let max_k = *lens_k.iter().max().expect("a sequence");
    let host = |vals: &[u32], shape: &[usize]| Tensor::from_vec(vals.to_vec(), shape, &Device::Cpu);
    let want = attention_varlen(
        &q,
        &k,
        &v,
        &Varlen::new(&host(&cu_q, &[batch + 1])?, &host(&cu_k, &[batch + 1])?, 1, max_k)
            .paged(&host(&table, &[batch, max_blocks])?, page),
        &params,
    )?
    .to_dtype(DType::F32)?
    .flatten_all()?
    .to_vec1::<f32>()?;
    let square = Tensor::randn(0f32, 1.0 / 64.0, (4096, 4096), &dev)?;
    for rep in 0..5 {
        let on_gpu_late = |vals: &[u32], shape: &[usize]| -> Result<Tensor> {
            let as_f32: Vec<f32> = vals.iter().map(|&x| x as f32).collect();
            poison_pool(&dev, 1 << 20)?;
            Tensor::from_vec(as_f32, shape, &dev)?.to_dtype(DType::U32)
        };
        // Queued ahead of the index tensors' writers (milliseconds of work on one stream).
        let busy = square.matmul(&square)?.matmul(&square)?;
        let varlen = Varlen::new(&on_gpu_late(&cu_q, &[batch + 1])?, &on_gpu_late(&cu_k, &[batch + 1])?, 1, max_k)
            .paged(&on_gpu_late(&table, &[batch, max_blocks])?, page);
        let got =
            attention_varlen(&q, &k, &v, &varlen, &params)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        drop(busy);
        assert_eq!(
            take_last_side_index_reads(),
            Some(side_reads),
            "{kind}: index tensors read on the side stream (rep {rep})"
        );
        let differ = want.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(
            differ,
            0,
            "{kind}, rep {rep}: {differ} of {} outputs differ from the host-index call (seed {seed})",
            got.len()
        );
    }
    println!(
        "gpu_device_indices_wait_for_their_writer ({kind}): 5 calls, {batch} sequences, {side_reads} index tensors read on the side stream, bit-identical to host indices"
    );
    Ok(())
}

/// Guessed GPU index values on candle's default device (src/cuda/speculation.rs): after a call
/// whose values repeated its predecessor's, or after a wrong guess, a packed call launches on
/// the guess before it reads its indices. Checked here, against the same call with host
/// indices, bit for bit: the first calls read and do not guess; a repeat guesses right; new
/// values (fresh tensors, and the same tensor written in place by `slice_set`) are guessed
/// wrong and run again on the values read, and the next call guesses those; after two wrong
/// guesses in a row calls read until values repeat; values that fail validation return the
/// error naming them, not the guess's result; `attention_varlen_into` and
/// `attention_varlen_backward` guess the same way; every index write queued behind
/// milliseconds of GPU work.
#[test]
fn gpu_device_indices_guess() -> Result<()> {
    use candle_fused_attn::{attention_varlen, take_last_index_guess, Varlen};
    use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
    let name = "gpu_device_indices_guess";
    let Some(dev) = cuda_device(name) else { return Ok(()) };
    if own_stream_devices() {
        println!("SKIPPED: {name}: a device of its own stream reads indices on a side stream and never guesses");
        return Ok(());
    }
    let seed = fresh_seed(name);
    let mut rng = StdRng::seed_from_u64(seed);
    let (h, hkv, d, page, batch, max_blocks) = (8, 2, 64, 16, 4, 40);
    let num_blocks = batch * max_blocks + 5;
    let q = Tensor::randn(0f32, 1.0, (batch, h, d), &dev)?.to_dtype(DType::BF16)?;
    let k = Tensor::randn(0f32, 1.0, (num_blocks, page, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let v = Tensor::randn(0f32, 1.0, (num_blocks, page, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let params = AttnParams::new(0.125).causal(true);
    let max_k = max_blocks * page;
    // A case: per-sequence key counts and a shuffled block table of the pool.
    let case = |rng: &mut StdRng| -> (Vec<u32>, Vec<u32>) {
        let mut pool: Vec<u32> = (0..num_blocks as u32).collect();
        pool.shuffle(rng);
        // At least two blocks each: the bad table below breaks sequence 1's second block.
        let lens: Vec<u32> = (0..batch).map(|_| rng.random_range(2 * page as u32 + 1..=max_k as u32)).collect();
        let cu_k = std::iter::once(0)
            .chain(lens.iter().scan(0u32, |s, &l| {
                *s += l;
                Some(*s)
            }))
            .collect();
        (cu_k, pool[..batch * max_blocks].to_vec())
    };
    let cu_q: Vec<u32> = (0..=batch as u32).collect();
    let square = Tensor::randn(0f32, 1.0 / 64.0, (2048, 2048), &dev)?;
    let on = |vals: &[u32], shape: &[usize], d: &Device| Tensor::from_vec(vals.to_vec(), shape, d);
    let run = |cu_k: &Tensor, table: &Tensor, cq: &Tensor| -> Result<Vec<f32>> {
        let vl = Varlen::new(cq, cu_k, 1, max_k).paged(table, page);
        attention_varlen(&q, &k, &v, &vl, &params)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()
    };
    let want = |cu_k: &[u32], table: &[u32]| -> Result<Vec<f32>> {
        let c = Device::Cpu;
        run(&on(cu_k, &[batch + 1], &c)?, &on(table, &[batch, max_blocks], &c)?, &on(&cu_q, &[batch + 1], &c)?)
    };
    // The index tensors written on the GPU behind busy work (a matmul chain on the stream).
    let late = |vals: &[u32], shape: &[usize]| -> Result<Tensor> {
        let busy = square.matmul(&square)?.matmul(&square)?;
        let as_f32: Vec<f32> = vals.iter().map(|&x| x as f32).collect();
        let t = Tensor::from_vec(as_f32, shape, &dev)?.to_dtype(DType::U32)?;
        drop(busy);
        Ok(t)
    };
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    let (cu_a, table_a) = case(&mut rng);
    let (cu_b, table_b) = case(&mut rng);
    let want_a = want(&cu_a, &table_a)?;
    let want_b = want(&cu_b, &table_b)?;
    let _ = take_last_index_guess();
    // (values, expected guess outcome, expected output)
    type Step<'a> = (&'a [u32], &'a [u32], Option<bool>, &'a [f32], &'a str);
    let steps: [Step; 11] = [
        (&cu_a, &table_a, None, &want_a, "first call: read"),
        (&cu_a, &table_a, None, &want_a, "first repeat: read"),
        (&cu_a, &table_a, Some(true), &want_a, "second repeat: guessed right"),
        (&cu_a, &table_a, Some(true), &want_a, "third repeat: guessed right"),
        (&cu_b, &table_b, Some(false), &want_b, "new values: guessed wrong, run again"),
        (&cu_b, &table_b, Some(true), &want_b, "after a wrong guess: the values read, right"),
        (&cu_a, &table_a, Some(false), &want_a, "new values: wrong"),
        (&cu_b, &table_b, Some(false), &want_b, "new values again: wrong, the second in a row"),
        (&cu_a, &table_a, None, &want_a, "after two wrong guesses: read"),
        (&cu_a, &table_a, None, &want_a, "a repeat: read"),
        (&cu_a, &table_a, Some(true), &want_a, "after a repeat: guessed right"),
    ];
    for (i, (cu_k, table, guess, expect, what)) in steps.iter().enumerate() {
        let got = run(&late(cu_k, &[batch + 1])?, &late(table, &[batch, max_blocks])?, &late(&cu_q, &[batch + 1])?)?;
        assert_eq!(take_last_index_guess(), *guess, "step {i} ({what}), seed {seed}");
        assert_eq!(same(&got, expect), 0, "step {i} ({what}): outputs differ from host indices, seed {seed}");
    }
    // One tensor written in place between calls: the guess (its old values) is wrong.
    let (cu_c, table_c) = case(&mut rng);
    let want_c = want(&cu_b, &table_c)?;
    let (cu_t, cq_t) = (late(&cu_b, &[batch + 1])?, late(&cu_q, &[batch + 1])?);
    let table_t = late(&table_b, &[batch, max_blocks])?;
    let got = run(&cu_t, &table_t, &cq_t)?;
    assert_eq!(take_last_index_guess(), Some(false), "values b after a: guessed wrong, seed {seed}");
    assert_eq!(same(&got, &want_b), 0, "values b: outputs differ, seed {seed}");
    let _ = (run(&cu_t, &table_t, &cq_t)?, take_last_index_guess());
    table_t.slice_set(&late(&table_c, &[batch, max_blocks])?, 0, 0)?;
    let got = run(&cu_t, &table_t, &cq_t)?;
    assert_eq!(take_last_index_guess(), Some(false), "a table written in place: guessed wrong, seed {seed}");
    assert_eq!(same(&got, &want_c), 0, "a table written in place: outputs differ, seed {seed}");
    let _ = cu_c;
    // Bad values after right guesses: the error, naming them.
    let got = run(&cu_t, &table_t, &cq_t)?;
    assert_eq!(take_last_index_guess(), Some(true), "after the in-place write: guessed right, seed {seed}");
    assert_eq!(same(&got, &want_c), 0, "after the in-place write: outputs differ, seed {seed}");
    let mut bad = table_c.clone();
    bad[max_blocks + 1] = num_blocks as u32 + 3;
    let err = run(&cu_t, &late(&bad, &[batch, max_blocks])?, &cq_t)
        .expect_err("an out-of-range block after right guesses must fail")
        .to_string();
    assert_eq!(take_last_index_guess(), Some(false), "bad values after right guesses, seed {seed}");
    assert!(err.contains(&format!("block_table[1, 1] = {}", num_blocks + 3)), "the error names the entry: {err}");
    // attention_varlen_into guesses too: a wrong guess's result is overwritten in out.
    let out = Tensor::zeros((batch, h, d), DType::BF16, &dev)?;
    let into = |cu_k: &[u32], table: &[u32]| -> Result<Vec<f32>> {
        let vl = Varlen::new(&late(&cu_q, &[batch + 1])?, &late(cu_k, &[batch + 1])?, 1, max_k)
            .paged(&late(table, &[batch, max_blocks])?, page);
        candle_fused_attn::attention_varlen_into(&out, &q, &k, &v, &vl, &params)?;
        out.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()
    };
    let _ = take_last_index_guess();
    let into_steps: [Step; 5] = [
        // The bad table's values are the kept ones (a wrong guess): guessed, and wrong.
        (&cu_a, &table_a, Some(false), &want_a, "into: after the bad table, guessed wrong"),
        (&cu_a, &table_a, None, &want_a, "into: two wrong guesses in a row, read"),
        (&cu_a, &table_a, Some(true), &want_a, "into: guessed right"),
        (&cu_b, &table_b, Some(false), &want_b, "into: guessed wrong, overwritten"),
        (&cu_b, &table_b, Some(true), &want_b, "into: the values read, right"),
    ];
    for (i, (cu_k, table, guess, expect, what)) in into_steps.iter().enumerate() {
        let got = into(cu_k, table)?;
        assert_eq!(take_last_index_guess(), *guess, "into step {i} ({what}), seed {seed}");
        assert_eq!(same(&got, expect), 0, "into step {i} ({what}): outputs differ from host indices, seed {seed}");
    }
    // attention_varlen_backward guesses too (unpaged packed K/V, f32). Its gradients sum with
    // atomics, so two runs differ in rounding: compared within 1e-4 of the largest gradient
    // (wrong sequence boundaries change them by their own size).
    let lens_x = [5u32, 37, 64, 1];
    let lens_y = [37u32, 5, 1, 64];
    let total = lens_x.iter().sum::<u32>() as usize;
    let cu_of = |lens: &[u32]| -> Vec<u32> {
        std::iter::once(0)
            .chain(lens.iter().scan(0u32, |s, &l| {
                *s += l;
                Some(*s)
            }))
            .collect()
    };
    let qb = Tensor::randn(0f32, 1.0, (total, h, d), &dev)?;
    let kb = Tensor::randn(0f32, 1.0, (total, hkv, d), &dev)?;
    let vb = Tensor::randn(0f32, 1.0, (total, hkv, d), &dev)?;
    let g = Tensor::randn(0f32, 1.0, (total, h, d), &dev)?;
    let pb = AttnParams::new(0.125).causal(true);
    let grads = |cu: &Tensor, out: &Tensor, lse: &Tensor| -> Result<Vec<Vec<f32>>> {
        let vl = Varlen::new(cu, cu, 64, 64);
        let (dq, dk, dv) = candle_fused_attn::attention_varlen_backward(&qb, &kb, &vb, out, &g, lse, &vl, &pb)?;
        [dq, dk, dv].iter().map(|t| t.flatten_all()?.to_vec1::<f32>()).collect()
    };
    let mut wants = Vec::new();
    for lens in [&lens_x, &lens_y] {
        let cu = on(&cu_of(lens), &[batch + 1], &Device::Cpu)?;
        let (out, lse) =
            candle_fused_attn::attention_varlen_with_lse(&qb, &kb, &vb, &Varlen::new(&cu, &cu, 64, 64), &pb)?;
        let want = grads(&cu, &out, &lse)?;
        wants.push((out, lse, want));
    }
    let close = |got: &[Vec<f32>], want: &[Vec<f32>]| -> bool {
        got.iter().zip(want).all(|(a, b)| {
            let big = b.iter().fold(0f32, |m, x| m.max(x.abs()));
            a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * big + 1e-6)
        })
    };
    let _ = take_last_index_guess();
    let bwd_steps: [(usize, Option<bool>, &str); 5] = [
        (0, None, "backward: a new signature, read"),
        (0, None, "backward: a repeat, read"),
        (0, Some(true), "backward: guessed right"),
        (1, Some(false), "backward: new boundaries, guessed wrong"),
        (1, Some(true), "backward: the values read, right"),
    ];
    for (i, (which, guess, what)) in bwd_steps.iter().enumerate() {
        let lens = if *which == 0 { &lens_x } else { &lens_y };
        let (out, lse, want) = &wants[*which];
        let got = grads(&late(&cu_of(lens), &[batch + 1])?, out, lse)?;
        assert_eq!(take_last_index_guess(), *guess, "backward step {i} ({what}), seed {seed}");
        assert!(close(&got, want), "backward step {i} ({what}): gradients differ from host indices, seed {seed}");
    }
    println!("{name}: 11 steps, an in-place write, a bad table, 5 steps into a caller's out and 5 backward steps, each as expected, matching host indices (seed {seed})");
    Ok(())
}

/// `attention_varlen_into` on CUDA writes `attention_varlen`'s bits into the caller's buffer,
/// and nothing outside it: random packed and paged cases (prefill and decode paths, every
/// dtype, both kernel generations), `out` a view of a NaN-filled buffer at an aligned offset
/// (the kernels store into it) or at one element (not 16-byte aligned: the forward runs into
/// a fresh buffer and one device copy moves it), the buffer around the view still NaN after.
#[test]
fn gpu_varlen_into() -> Result<()> {
    use candle_fused_attn::{attention_varlen, attention_varlen_into};
    let Some(dev) = cuda_device("gpu_varlen_into") else { return Ok(()) };
    let seed = fresh_seed("gpu_varlen_into");
    let (mut cases, mut misaligned) = (0usize, 0usize);
    // FUSED_ATTN_INTO_CASES=N: fewer cases (compute-sanitizer runs each kernel 10-100× slower).
    let n_cases = std::env::var("FUSED_ATTN_INTO_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    for (i, dtype) in [DType::BF16, DType::F16, DType::F32].into_iter().cycle().take(n_cases).enumerate() {
        let c = VarCase::random(case_seed(seed, i));
        let (q, k, v, vl, p) = c.inputs(dtype)?;
        let (qd, kd, vd) = (q.to_device(&dev)?, k.to_device(&dev)?, v.to_device(&dev)?);
        let (vld, pd) = varlen_to(&dev, &vl, &p)?;
        let kernels = if i % 4 == 3 { CudaKernels::Sm80 } else { CudaKernels::Auto };
        let want = with_cuda_kernels(kernels, || attention_varlen(&qd, &kd, &vd, &vld, &pd))?;
        let n = want.elem_count();
        // Views at 0, 8 (16-byte aligned in every dtype) and 1 element (misaligned).
        let off = [0usize, 8, 1][i % 3];
        misaligned += usize::from(off == 1);
        let pad = 24;
        let buf = Tensor::full(f32::NAN, n + pad, &dev)?.to_dtype(dtype)?;
        let out = buf.narrow(0, off, n)?.reshape(q.dims())?;
        with_cuda_kernels(kernels, || attention_varlen_into(&out, &qd, &kd, &vd, &vld, &pd))?;
        let (got, want) = (to_f64_vec(&out)?, to_f64_vec(&want)?);
        let differ = got.iter().zip(&want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(differ, 0, "{differ} of {n} outputs differ from attention_varlen: {dtype:?} {kernels:?} offset {off} {} (case seed {})", c.describe(), c.seed);
        let around = to_f64_vec(&buf)?;
        let touched = around.iter().enumerate().filter(|&(j, x)| (j < off || j >= off + n) && !x.is_nan()).count();
        assert_eq!(
            touched, 0,
            "{touched} elements outside out were written: {dtype:?} offset {off} (case seed {})",
            c.seed
        );
        cases += 1;
    }
    println!("gpu_varlen_into: {cases} cases bit-identical to attention_varlen ({misaligned} through the misaligned copy), nothing written outside out");
    Ok(())
}

/// A packed batch gives each sequence's rows exactly what a dense call on that sequence
/// alone gives (the same prefill instance: every sequence longer than the decode crossover),
/// paged or not, on the sm_80 kernel (forced) and on the default one (the Hopper kernel on
/// 9.0 GPUs, wherever both sides ran it).
#[test]
fn gpu_varlen_matches_dense_per_sequence() -> Result<()> {
    use candle_fused_attn::attention_varlen;
    let Some(dev) = cuda_device("gpu_varlen_matches_dense_per_sequence") else { return Ok(()) };
    let seed = fresh_seed("gpu_varlen_matches_dense_per_sequence");
    let (mut compared, mut hopper_pairs, mut not_compared) = (0usize, 0usize, 0usize);
    for (i, dtype) in [DType::F32, DType::F16, DType::BF16].into_iter().cycle().take(12).enumerate() {
        let mut c = VarCase::random(case_seed(seed, i));
        c.len_q = vec![129, 300, 257];
        c.len_k = vec![129, 500, 1];
        c.ranges = None;
        if i % 2 == 1 {
            // Layouts and head dims both kernel generations take (the Hopper kernel on 9.0).
            (c.head_dim, c.strided) = ([64, 128, 40, 96][(i / 2) % 4], false);
            c.page = [None, Some(256), Some(16)][(i / 2) % 3];
        }
        let (q, k, v, vl, p) = c.inputs(dtype)?;
        let (qd, kd, vd) = (q.to_device(&dev)?, k.to_device(&dev)?, v.to_device(&dev)?);
        let (vld, pd) = varlen_to(&dev, &vl, &p)?;
        let kv_dense = attention_dense_parts(&c, &k, &v, &vl)?;
        // Both kernel generations; each side's kernel is recorded, and the rows must be
        // bit-identical whenever both sides ran the same generation (on a Hopper GPU a packed
        // batch the Hopper kernel cannot take, say 16-key pages, runs the sm_80 kernel while
        // its dense sequences take the Hopper one: other instruction order, other roundings).
        for kernels in [CudaKernels::Sm80, CudaKernels::Auto] {
            take_last_prefill_kernel();
            let packed = with_cuda_kernels(kernels, || attention_varlen(&qd, &kd, &vd, &vld, &pd))?;
            let packed_ran = take_last_prefill_kernel().unwrap_or("none");
            let mut q0 = 0;
            for (b, (kb, vb)) in kv_dense.iter().enumerate() {
                let lq = c.len_q[b];
                let qb = q.narrow(0, q0, lq)?.unsqueeze(0)?.to_device(&dev)?;
                let mut pb = pd.clone();
                if c.alibi == 2 {
                    pb.alibi_slopes = Some(pd.alibi_slopes.as_ref().unwrap().narrow(0, b, 1)?);
                }
                let (kb, vb) = (kb.unsqueeze(0)?.to_device(&dev)?, vb.unsqueeze(0)?.to_device(&dev)?);
                take_last_prefill_pairs();
                take_last_prefill_tail();
                let dense = with_cuda_kernels(kernels, || attention(&qb, &kb, &vb, &pb))?.squeeze(0)?;
                let dense_ran = take_last_prefill_kernel().unwrap_or("none");
                // A small dense call may split its tiles over clusters of blocks, a long one its
                // last round's tiles into pieces (another order of additions; the packed entry
                // never does): not compared bit for bit.
                let dense_pairs = take_last_prefill_pairs() || take_last_prefill_tail() > 0;
                q0 += lq;
                // Nor is a dense call on another instance of the same generation (a dense
                // unmasked sequence may take a `_wide` instance, which the packed entry never
                // takes: other key blocks).
                if dense_ran != packed_ran || dense_pairs {
                    not_compared += 1;
                    continue;
                }
                hopper_pairs += is_hopper(packed_ran) as usize;
                let mine = packed.narrow(0, q0 - lq, lq)?;
                let (a, bb) = (to_f64_vec(&dense)?, to_f64_vec(&mine)?);
                assert!(
                    a.iter().zip(&bb).all(|(x, y)| x == y || (x.is_nan() && y.is_nan())),
                    "sequence {b} differs from its dense call ({kernels:?}: packed ran {packed_ran}, dense \
                     {dense_ran}): {dtype:?} {}",
                    c.describe()
                );
                compared += 1;
            }
        }
    }
    println!(
        "gpu_varlen_matches_dense_per_sequence: 12 batches of 3 sequences × 2 kernel settings: {compared} \
         sequences bit-identical ({hopper_pairs} of them on the Hopper kernel), {not_compared} not \
         compared (packed and dense on different kernels, or the dense call split over a cluster)"
    );
    // Forced sm_80, every sequence is compared.
    assert!(compared >= 36, "only {compared} sequences compared");
    Ok(())
}

/// Each sequence's keys and values as dense `(len_k, kv_heads, d)` tensors (gathered from
/// their pages on the CPU).
fn attention_dense_parts(
    c: &VarCase,
    k: &Tensor,
    v: &Tensor,
    vl: &candle_fused_attn::Varlen,
) -> Result<Vec<(Tensor, Tensor)>> {
    let mut out = Vec::new();
    let mut k0 = 0;
    for (b, &lk) in c.len_k.iter().enumerate() {
        let part = |t: &Tensor| -> Result<Tensor> {
            match c.page {
                None => t.narrow(0, k0, lk),
                Some(page) => {
                    let rows = t.reshape(((), t.dim(t.rank() - 2)?, c.head_dim))?;
                    let table = vl.block_table.as_ref().unwrap().get(b)?.to_vec1::<u32>()?;
                    let idx: Vec<u32> = (0..lk).map(|j| table[j / page] * page as u32 + (j % page) as u32).collect();
                    rows.index_select(&Tensor::new(idx.as_slice(), &Device::Cpu)?, 0)
                }
            }
        };
        out.push((part(k)?.contiguous()?, part(v)?.contiguous()?));
        k0 += lk;
    }
    Ok(out)
}

/// A random packed batch that the Hopper kernel's `_varlen` entry can take: f16/bf16, a head
/// dim of the Hopper instances (multiples of 8 up to 128), k/v packed or paged with pages of
/// whole 128-key blocks or of 8–64 keys (and some with 24-key pages, which stay on the sm_80
/// kernel), one sequence long enough (≥ 129 queries) that the batch takes the prefill path.
fn hopper_var_case(seed: u64, i: usize) -> (DType, VarCase) {
    // 11 dims against 8 page kinds, so that every dim meets every page kind.
    const DIMS: [usize; 11] = [8, 40, 64, 72, 96, 104, 120, 128, 160, 192, 256];
    let mut c = VarCase::random(seed);
    c.head_dim = DIMS[i % DIMS.len()];
    c.page = [None, None, Some(128), Some(256), Some(16), Some(64), Some(8), Some(24)][i % 8];
    let at = (seed % c.len_q.len() as u64) as usize;
    c.len_q[at] = c.len_q[at].max(129 + (seed as usize % 200));
    c.len_k[at] = c.len_k[at].max(1);
    if let Some(ranges) = &mut c.ranges {
        // Keep every range inside its (possibly longer) sequence.
        for (r, &lk) in ranges.iter_mut().zip(&c.len_k) {
            for x in r.iter_mut() {
                if x[1] as usize > lk {
                    *x = [0, 0];
                }
            }
        }
    }
    (if i.is_multiple_of(2) { DType::BF16 } else { DType::F16 }, c)
}

/// Whether a prefill kernel name is a Hopper instance.
fn is_hopper(kernel: &str) -> bool {
    kernel.ends_with("_sm90")
}

/// Skips (returns false, with a message) unless the device runs the Hopper prefill kernel.
fn hopper_device(test: &str, dev: &Device) -> bool {
    let probe = Tensor::zeros((1, 256, 2, 128), DType::BF16, dev).unwrap();
    take_last_prefill_kernel();
    attention(&probe, &probe, &probe, &AttnParams::new(0.1)).unwrap();
    let probe_kernel = take_last_prefill_kernel().unwrap_or("none");
    if !is_hopper(probe_kernel) {
        println!("SKIPPED: {test}: the device is not compute capability 9.0 (a bf16 d128 prefill ran {probe_kernel})");
        return false;
    }
    true
}

/// Packed batches on the Hopper kernel (its `_varlen` entry): random varlen cases (every mask,
/// prefix ranges, softcap, ALiBi, GQA/MQA, packed and paged k/v, empty and odd sequences),
/// each on both kernel generations against the f64 oracle, outputs poisoned first. Fails if a
/// case the Hopper kernel covers (contiguous rows, pages of whole key blocks) ran another
/// kernel, or if fewer than a third of the cases ran it. Skips on GPUs other than 9.0.
#[test]
fn gpu_hopper_varlen() {
    let test = "gpu_hopper_varlen";
    let Some(dev) = cuda_device(test) else { return };
    if !hopper_device(test, &dev) {
        return;
    }
    let seed = fresh_seed(test);
    let n = std::env::var("FUSED_ATTN_HOPPER_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(160);
    let cases: Vec<_> = (0..n).map(|i| hopper_var_case(case_seed(seed, i), i)).collect();
    check_hopper_varlen(test, &dev, &cases);
}

/// Every case on both kernel generations against the f64 oracle ([`HopperTally`]): fails on
/// an error beyond the tolerance, on a covered case (contiguous rows, an accepted page size)
/// that did not run the Hopper kernel, or if fewer than a third of the cases ran it.
fn check_hopper_varlen(test: &'static str, dev: &Device, cases: &[(DType, VarCase)]) {
    let mut tally = HopperTally::new(test);
    for (ci, chunk) in cases.chunks(PREPARE_AHEAD).enumerate() {
        let prepared: Vec<_> = chunk
            .par_iter()
            .enumerate()
            .map(|(i, (dtype, case))| prepare_varlen(*dtype, case, (ci * PREPARE_AHEAD + i).is_multiple_of(3)))
            .collect();
        for ((dtype, case), prep) in chunk.iter().zip(prepared) {
            let prep = prep.unwrap_or_else(|e| panic!("{test}: {} prepare: {e}", case.describe()));
            // The instance's key block: 128 keys up to d128, 64 above (HopperTraits).
            let block = if case.head_dim <= 128 { 128 } else { 64 };
            let coverable =
                !case.strided && case.page.is_none_or(|pg| pg % block == 0 || (block % pg == 0 && pg % 8 == 0));
            let what = format!("{dtype:?} {} (case seed {})", case.describe(), case.seed);
            tally.run(&what, coverable, || check_varlen(dev, *dtype, case, &prep));
        }
    }
    tally.finish(cases.len());
}

/// A packed batch's neighbours stay out of each sequence on the Hopper kernel: its last key
/// block reads the next sequence's rows (packed) or the rest of the page (paged), masked to
/// P = 0, and 0 · NaN would still be NaN. NaN in every k/v row that sequence 0 does not own
/// (the other sequences' rows when packed; every other cache row, the rest of its own last
/// page included, when paged) must leave its output finite and bit-identical to its output
/// without the NaN. Skips off 9.0 GPUs.
#[test]
fn gpu_hopper_varlen_neighbours_stay_out() -> Result<()> {
    use candle_fused_attn::attention_varlen;
    let test = "gpu_hopper_varlen_neighbours_stay_out";
    let Some(dev) = cuda_device(test) else { return Ok(()) };
    if !hopper_device(test, &dev) {
        return Ok(());
    }
    let seed = fresh_seed(test);
    let mut checked = 0;
    for (i, page) in [None, Some(128), Some(256), Some(16), Some(64), None].into_iter().enumerate() {
        let mut c = VarCase::random(case_seed(seed, i));
        (c.heads, c.kv_heads, c.head_dim) = (4, 2, [64, 128][i % 2]);
        c.len_q = vec![200, 150, 131];
        c.len_k = vec![300, 77, 140];
        (c.page, c.strided, c.ranges, c.flat_pages) = (page, false, None, false);
        (c.causal, c.window, c.softcap, c.alibi) = (i % 2 == 1, (None, None), None, 0);
        let dtype = if i % 2 == 0 { DType::BF16 } else { DType::F16 };
        let (q, k, v, vl, p) = c.inputs(dtype)?;
        let (vld, pd) = varlen_to(&dev, &vl, &p)?;
        let (qd, kd, vd) = (q.to_device(&dev)?, k.to_device(&dev)?, v.to_device(&dev)?);
        take_last_prefill_kernel();
        let clean = attention_varlen(&qd, &kd, &vd, &vld, &pd)?;
        let ran = take_last_prefill_kernel().unwrap_or("none");
        assert!(is_hopper(ran), "{test}: {} ran {ran}, not the Hopper kernel", c.describe());
        // Rows of k/v (as (rows, kv_heads, d)) that sequence 0 does not own.
        let rows = k.elem_count() / (c.kv_heads * c.head_dim);
        let owned: Vec<bool> = match page {
            None => (0..rows).map(|r| r < c.len_k[0]).collect(),
            Some(pg) => {
                // Sequence 0's pages, and its keys within them.
                let table = vl.block_table.as_ref().unwrap().get(0)?.to_vec1::<u32>()?;
                let mut own = vec![false; rows];
                for j in 0..c.len_k[0] {
                    own[table[j / pg] as usize * pg + j % pg] = true;
                }
                own
            }
        };
        let poisoned = |t: &Tensor| -> Result<Tensor> {
            let flat = t.reshape((rows, c.kv_heads * c.head_dim))?.to_dtype(DType::F32)?;
            let mut data = flat.to_vec2::<f32>()?;
            for (r, row) in data.iter_mut().enumerate() {
                if !owned[r] {
                    row.iter_mut().for_each(|x| *x = f32::NAN);
                }
            }
            Tensor::new(data, &Device::Cpu)?.to_dtype(dtype)?.reshape(t.shape())?.to_device(&dev)
        };
        let dirty = attention_varlen(&qd, &poisoned(&k)?, &poisoned(&v)?, &vld, &pd)?;
        let lq = c.len_q[0];
        let (a, b) = (to_f64_vec(&clean.narrow(0, 0, lq)?)?, to_f64_vec(&dirty.narrow(0, 0, lq)?)?);
        assert!(a.iter().all(|x| x.is_finite()), "{test}: the clean output is not finite: {}", c.describe());
        assert!(a == b, "{test}: NaN outside sequence 0 changed its output: {dtype:?} {}", c.describe());
        checked += 1;
    }
    println!("{test}: {checked} batches, sequence 0 unchanged by NaN in rows it does not own");
    Ok(())
}

/// Small packed batches on the Hopper kernel for compute-sanitizer: packed and paged k/v,
/// odd and empty sequences, prefix ranges, each on both kernel generations (skips off 9.0
/// GPUs).
#[test]
fn gpu_sanitizer_hopper_varlen() {
    let test = "gpu_sanitizer_hopper_varlen";
    let Some(dev) = cuda_device(test) else { return };
    if !hopper_device(test, &dev) {
        return;
    }
    let seed = fresh_seed(test);
    let cases: Vec<_> = (0..10)
        .map(|i| {
            let (dtype, mut c) = hopper_var_case(case_seed(seed, i), i);
            c.heads = c.heads.min(4);
            c.kv_heads = c.kv_heads.min(c.heads);
            while c.heads % c.kv_heads != 0 {
                c.kv_heads -= 1;
            }
            c.strided = false;
            (dtype, c)
        })
        .collect();
    // Both generations, and a failure unless the Hopper kernel took its cases: a sanitizer
    // run of this test that silently ran only the sm_80 kernel would check nothing new.
    check_hopper_varlen(test, &dev, &cases);
}

/// Small packed and paged batches for compute-sanitizer (memcheck + racecheck): odd lengths,
/// empty sequences, pages 16, 32, 256 and 5, prefix ranges, decode and prefill, every dtype.
#[test]
fn gpu_sanitizer_varlen() {
    let Some(dev) = cuda_device("gpu_sanitizer_varlen") else { return };
    let seed = fresh_seed("gpu_sanitizer_varlen");
    let mut cases = Vec::new();
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for (i, page) in [None, Some(16), Some(32), Some(256), Some(5)].into_iter().enumerate() {
            for decode in [false, true] {
                let mut c = VarCase::random(case_seed(seed, cases.len()));
                c.head_dim = [40, 64, 128, 256, 512][i];
                (c.heads, c.kv_heads) = (4, 2);
                if decode {
                    (c.len_q, c.len_k) = (vec![1, 3, 0, 2], vec![300, 1200, 5, 0]);
                } else {
                    (c.len_q, c.len_k) = (vec![17, 0, 70, 1], vec![33, 9, 65, 130]);
                }
                c.page = page;
                c.ranges = Some(vec![vec![[0, 3]], vec![[2, 9]], vec![[0, 0]], vec![[10, 20]]]);
                if c.len_k.iter().zip(c.ranges.as_ref().unwrap()).any(|(&lk, r)| r[0][1] as usize > lk) {
                    c.ranges = None;
                }
                cases.push((dtype, c));
            }
        }
    }
    check_all_varlen("gpu_sanitizer_varlen", &dev, &cases);
}

/// Head dims above 256 (the d384/d512 backward instances, and the f32 kernel's 8-row tiles):
/// random cases of the gradient sweep's space at head dims 257..=512, dq, dk, dv against the
/// f64 oracle. The fused gradients come from `attention_backward` on the forward's output
/// (the CPU forward's where the CUDA forward has no instance for the head dim yet).
#[test]
fn gpu_grad_large_head_dim() {
    let test = "gpu_grad_large_head_dim";
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let mut failures = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for i in 0..24 {
            let mut case = Case::random(case_seed(seed, i), &common::grad::grad_limits());
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(case.seed ^ 0xd512);
            let d = if i % 4 == 3 {
                rand::Rng::random_range(&mut rng, 257..=512)
            } else {
                [264, 320, 384, 448, 512, 512][i % 6]
            };
            if case.softmax_scale == 1.0 / (case.head_dim as f32).sqrt() {
                case.softmax_scale = 1.0 / (d as f32).sqrt();
            }
            case.head_dim = d;
            while case.work() > 4_000_000 {
                if case.seq_q >= case.seq_k && case.seq_q > 1 {
                    case.seq_q = case.seq_q * 3 / 4;
                } else {
                    case.seq_k = (case.seq_k * 3 / 4).max(1);
                }
            }
            let elems = case.batch * (case.seq_q * case.heads + 2 * case.seq_k * case.kv_heads) * case.head_dim;
            poison_pool(&dev, (16 * elems * 4).max(1 << 20)).unwrap();
            let results = common::grad::check_grad_case_with(&case, &dev, dtype, true).expect("grad case ran");
            if results.iter().any(|r| !r.passes()) {
                failures += 1;
                println!("FAIL grad {dtype:?} {case:?}");
                for r in &results {
                    println!(
                        "    {}: fused {:.3e} allowed {:.3e} (naive {:.3e}, floor {:.3e}) poisoned {}",
                        r.name,
                        r.fused_max_abs,
                        r.allowed(),
                        r.naive_max_abs,
                        r.floor,
                        r.poisoned
                    );
                }
            }
        }
    }
    println!("{test}: 72 cases, {failures} failed");
    assert_eq!(failures, 0, "{test}: {failures} cases failed (printed above; seed {seed})");
}

/// A packed batch for the packed backward tests: lengths, heads, head dim and params, with
/// the per-sequence dense params (`AttnParams` of sequence b) beside the packed ones.
struct PackedCase {
    cu_q: Vec<u32>,
    cu_k: Vec<u32>,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    packed: AttnParams,
    dense: Vec<AttnParams>,
    /// `(batch, 2, 2)` multimodal ranges of the packed call (none: `None`).
    ranges: Option<Vec<i32>>,
}

/// Draws a packed case. Masks: none, causal, windows, or causal plus a multimodal range
/// `[0, len_k)` on every sequence with `len_q <= len_k` (every row's diagonal is then a key
/// inside the range, so every row sees every key: the dense call without a mask is the same
/// attention), which exercises the kernels' range logic against a dense call.
fn packed_case(seed: u64, dev: &Device) -> Result<PackedCase> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let batch = rng.random_range(1..=5usize);
    let mask = rng.random_range(0..4);
    let (mut cu_q, mut cu_k) = (vec![0u32], vec![0u32]);
    for _ in 0..batch {
        let lk = if rng.random_bool(0.1) { 0 } else { rng.random_range(1..=260u32) };
        let lq = match rng.random_range(0..5) {
            _ if mask == 3 => rng.random_range(0..=lk),
            0 => 0,
            1 | 2 => lk,
            _ => rng.random_range(1..=260u32),
        };
        cu_q.push(cu_q.last().unwrap() + lq);
        cu_k.push(cu_k.last().unwrap() + lk);
    }
    let (heads, kv_heads) = match rng.random_range(0..4) {
        0 => (4, 4),
        1 => (8, 2),
        2 => (6, 1),
        _ => (3, 3),
    };
    let head_dim = [8, 40, 64, 96, 128, 200, 256, 320, 512][rng.random_range(0..9)];
    let scale = 1.0 / (head_dim as f32).sqrt();
    let mut base = AttnParams::new(scale);
    if rng.random_bool(0.25) {
        base = base.softcap(rng.random_range(1.0..30.0f32));
    }
    let slopes: Option<Vec<f32>> =
        rng.random_bool(0.25).then(|| (0..batch * heads).map(|_| rng.random_range(0.01..0.5f32)).collect());
    type Mask = Box<dyn Fn(AttnParams) -> AttnParams>;
    let (packed_mask, dense_mask): (Mask, Mask) = match mask {
        0 => (Box::new(|p| p), Box::new(|p| p)),
        1 => (Box::new(|p| p.causal(true)), Box::new(|p| p.causal(true))),
        2 => {
            let (l, r) = (rng.random_range(0..40usize), rng.random_range(0..40usize));
            (Box::new(move |p| p.window(Some(l), Some(r))), Box::new(move |p| p.window(Some(l), Some(r))))
        }
        _ => (Box::new(|p| p.causal(true)), Box::new(|p| p)),
    };
    let mut packed = packed_mask(base.clone());
    if let Some(s) = &slopes {
        packed = packed.alibi_slopes(&Tensor::from_vec(s.clone(), (batch, heads), dev)?);
    }
    let mut dense = Vec::new();
    for b in 0..batch {
        let mut p = dense_mask(base.clone());
        if let Some(s) = &slopes {
            p = p.alibi_slopes(&Tensor::from_vec(s[b * heads..(b + 1) * heads].to_vec(), (1, heads), dev)?);
        }
        dense.push(p);
    }
    let ranges =
        (mask == 3).then(|| (0..batch).flat_map(|b| [0, (cu_k[b + 1] - cu_k[b]) as i32, 0, 0]).collect::<Vec<i32>>());
    Ok(PackedCase { cu_q, cu_k, heads, kv_heads, head_dim, packed, dense, ranges })
}

/// One packed case: the packed backward's dq, dk, dv (through `attention_varlen_backward`,
/// or with `autograd` through `attention_varlen`'s graph) against the dense backward of each
/// sequence alone (`attention_backward` on the dense forward's output). Both run the same
/// per-element arithmetic; only f32 summation orders (dQ atomics, split dK/dV) and with them
/// the final rounding may differ, so each gradient of sequence b must agree within twice
/// `grad_floor` of that sequence (its rounding and accumulation-order terms, once per side).
/// Returns the number of failing sequences, or `None` when the packed forward is missing.
fn check_packed_case(dev: &Device, dtype: DType, seed: u64, autograd: bool) -> Result<Option<usize>> {
    use candle_fused_attn::{attention_varlen_backward, attention_varlen_with_lse, Varlen};
    let c = packed_case(seed, dev)?;
    let batch = c.cu_q.len() - 1;
    let (tq, tk) = (*c.cu_q.last().unwrap() as usize, *c.cu_k.last().unwrap() as usize);
    let (h, hk, d) = (c.heads, c.kv_heads, c.head_dim);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed ^ 0x7ac4);
    let mk = |rng: &mut rand::rngs::StdRng, shape: (usize, usize, usize)| -> Result<Tensor> {
        Tensor::from_vec(common::randn(rng, shape.0 * shape.1 * shape.2), shape, &Device::Cpu)?
            .to_dtype(dtype)?
            .to_device(dev)
    };
    let q = mk(&mut rng, (tq, h, d))?;
    let k = mk(&mut rng, (tk, hk, d))?;
    let v = mk(&mut rng, (tk, hk, d))?;
    let g = mk(&mut rng, (tq, h, d))?;
    let mut vl = Varlen::new(
        &Tensor::new(c.cu_q.as_slice(), dev)?,
        &Tensor::new(c.cu_k.as_slice(), dev)?,
        (0..batch).map(|b| (c.cu_q[b + 1] - c.cu_q[b]) as usize).max().unwrap_or(0),
        (0..batch).map(|b| (c.cu_k[b + 1] - c.cu_k[b]) as usize).max().unwrap_or(0),
    );
    if let Some(r) = &c.ranges {
        vl = vl.mm_prefix_ranges(&Tensor::from_vec(r.clone(), (batch, 2, 2), dev)?);
    }
    // Per sequence: the dense forward and backward.
    let seq = |t: &Tensor, cu: &[u32], b: usize| t.narrow(0, cu[b] as usize, (cu[b + 1] - cu[b]) as usize);
    let mut dense = Vec::new();
    let (mut outs, mut lses) = (Vec::new(), Vec::new());
    for b in 0..batch {
        let (qb, kb, vb, gb) = (
            seq(&q, &c.cu_q, b)?.unsqueeze(0)?,
            seq(&k, &c.cu_k, b)?.unsqueeze(0)?,
            seq(&v, &c.cu_k, b)?.unsqueeze(0)?,
            seq(&g, &c.cu_q, b)?.unsqueeze(0)?,
        );
        let (ob, lb) = common::grad::forward_with_lse(&qb, &kb, &vb, &c.dense[b])?;
        let grads = candle_fused_attn::attention_backward(&qb, &kb, &vb, &ob, &gb, &lb, &c.dense[b])?;
        outs.push(ob.squeeze(0)?);
        lses.push(lb.squeeze(0)?);
        dense.push(grads);
    }
    let (pdq, pdk, pdv) = if autograd {
        let vars = [&q, &k, &v].map(candle_core::Var::from_tensor);
        let [qv, kv, vv] = vars;
        let (qv, kv, vv) = (qv?, kv?, vv?);
        let out = match attention_varlen_with_lse(qv.as_tensor(), kv.as_tensor(), vv.as_tensor(), &vl, &c.packed) {
            Err(e) if e.to_string().contains("not implemented yet") => return Ok(None),
            r => r?.0,
        };
        let grads = (out.to_dtype(DType::F32)? * g.to_dtype(DType::F32)?)?.sum_all()?.backward()?;
        let get = |v: &candle_core::Var| {
            grads.get(v.as_tensor()).cloned().ok_or_else(|| candle_core::Error::Msg("no gradient".into()))
        };
        (get(&qv)?, get(&kv)?, get(&vv)?)
    } else {
        let out = Tensor::cat(&outs, 0)?;
        let lse = Tensor::cat(&lses, 1)?;
        attention_varlen_backward(&q, &k, &v, &out, &g, &lse, &vl, &c.packed)?
    };
    let mut failures = 0;
    for (b, (dq, dk, dv)) in dense.iter().enumerate() {
        let (qb, kb, vb, gb) = (seq(&q, &c.cu_q, b)?, seq(&k, &c.cu_k, b)?, seq(&v, &c.cu_k, b)?, seq(&g, &c.cu_q, b)?);
        let f64_cpu = |t: &Tensor| t.unsqueeze(0)?.to_device(&Device::Cpu)?.to_dtype(DType::F64);
        let dense_g = [dq.clone(), dk.clone(), dv.clone()]
            .map(|t| t.to_device(&Device::Cpu).and_then(|t| t.to_dtype(DType::F64)));
        let [a, bb, cc] = dense_g;
        let dense_g = [a?, bb?, cc?];
        let floors = common::grad::grad_floor(
            dtype,
            &f64_cpu(&qb)?,
            &f64_cpu(&kb)?,
            &f64_cpu(&vb)?,
            &f64_cpu(&gb)?,
            &common::grad::params_on_cpu(&c.dense[b])?,
            &dense_g,
        )?;
        let packed_g = [seq(&pdq, &c.cu_q, b)?, seq(&pdk, &c.cu_k, b)?, seq(&pdv, &c.cu_k, b)?];
        for (i, name) in ["dq", "dk", "dv"].into_iter().enumerate() {
            let x = common::to_f64_vec(&packed_g[i])?;
            let y = common::to_f64_vec(&dense_g[i])?;
            let err = x
                .iter()
                .zip(&y)
                .fold(0f64, |m, (x, y)| if x.is_finite() { m.max((x - y).abs()) } else { f64::INFINITY });
            if err > 2.0 * floors[i] {
                failures += 1;
                println!(
                    "FAIL packed {dtype:?} seed {seed} seq {b} (lens q {} k {}, h {h}/{hk}, d {d}, ranges {}): {name} differs by {err:.3e} > {:.3e}",
                    c.cu_q[b + 1] - c.cu_q[b],
                    c.cu_k[b + 1] - c.cu_k[b],
                    c.ranges.is_some(),
                    2.0 * floors[i]
                );
            }
        }
    }
    Ok(Some(failures))
}

/// The packed (varlen) backward, `attention_varlen_backward`, against each sequence's dense
/// backward (see `check_packed_case`).
#[test]
fn gpu_grad_packed() {
    let test = "gpu_grad_packed";
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let mut failures = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for i in 0..20 {
            let s = case_seed(seed, i);
            poison_pool(&dev, 64 << 20).unwrap();
            failures += check_packed_case(&dev, dtype, s, false).expect("packed case ran").expect("explicit backward");
        }
    }
    println!("{test}: 60 cases, {failures} failing sequences");
    assert_eq!(failures, 0, "{test}: {failures} sequences failed (printed above; seed {seed})");
}

/// Gradients through autograd on `attention_varlen` (the CUDA packed forward, then the
/// packed backward) against f64 autograd through `attention_ref_varlen`, with the dense
/// harness's rule (2 × the naive error in the same dtype + the derived floor):
/// `common::varlen::run_varlen_grad_sweep`, the CPU test's sweep, on CUDA.
#[test]
fn gpu_varlen_grad_sweep() {
    let test = "gpu_varlen_grad_sweep";
    let Some(dev) = cuda_device(test) else { return };
    let seed = fresh_seed(test);
    let mut failures = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        failures += common::varlen::run_varlen_grad_sweep(&dev, dtype, 40, seed).expect("varlen gradient sweep ran");
    }
    assert_eq!(failures, 0, "{test}: {failures} gradients failed (printed above; seed {seed})");
}

/// A packed call whose `max_seqlen_q`/`max_seqlen_k` are far above every sequence (i32::MAX is
/// accepted): session 40's CUDA panic hunt hit an illegal address on such a case (f32, d 1,
/// paged, `max_seqlen_q = i32::MAX`), whose query-block count wrapped in the sm_80 kernel's i32
/// math. The result must equal the same call with the exact maxima, on both kernel generations
/// and in every dtype, and the CPU's answer.
#[test]
fn gpu_varlen_huge_max_seqlen() -> Result<()> {
    use candle_fused_attn::{attention_varlen, Varlen};
    let Some(dev) = cuda_device("gpu_varlen_huge_max_seqlen") else { return Ok(()) };
    let cu_q = Tensor::new(&[0u32, 1, 6], &dev)?;
    let cu_k = Tensor::new(&[0u32, 40, 57], &dev)?;
    for (d, dtype) in [(1usize, DType::F32), (8, DType::F16), (64, DType::BF16), (72, DType::F32)] {
        let q = Tensor::randn(0f32, 1., (6, 4, d), &dev)?.to_dtype(dtype)?;
        let k = Tensor::randn(0f32, 1., (57, 2, d), &dev)?.to_dtype(dtype)?;
        let v = Tensor::randn(0f32, 1., (57, 2, d), &dev)?.to_dtype(dtype)?;
        let p = AttnParams::new(0.5).causal(true).window(Some(7), None);
        let exact = Varlen::new(&cu_q, &cu_k, 5, 40);
        for (mq, mk) in [(i32::MAX as usize, 40), (5, i32::MAX as usize), (i32::MAX as usize, i32::MAX as usize)] {
            let huge = Varlen::new(&cu_q, &cu_k, mq, mk);
            for kernels in [CudaKernels::Auto, CudaKernels::Sm80] {
                let want = with_cuda_kernels(kernels, || attention_varlen(&q, &k, &v, &exact, &p))?;
                let got = with_cuda_kernels(kernels, || attention_varlen(&q, &k, &v, &huge, &p))?;
                dev.synchronize()?;
                let (got, want) = (to_f64_vec(&got)?, to_f64_vec(&want)?);
                let differ = got.iter().zip(&want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                assert_eq!(differ, 0, "{differ} outputs differ: d {d} {dtype:?} {kernels:?} max_seqlen ({mq}, {mk})");
            }
        }
        let cpu = attention_varlen(
            &q.to_device(&Device::Cpu)?,
            &k.to_device(&Device::Cpu)?,
            &v.to_device(&Device::Cpu)?,
            &Varlen::new(&cu_q.to_device(&Device::Cpu)?, &cu_k.to_device(&Device::Cpu)?, 5, 40),
            &p,
        )?;
        let gpu = attention_varlen(&q, &k, &v, &exact, &p)?;
        let worst = to_f64_vec(&gpu)?.iter().zip(to_f64_vec(&cpu)?).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let tol = if dtype == DType::F32 { 1e-5 } else { 2e-2 };
        assert!(worst <= tol, "d {d} {dtype:?}: GPU and CPU differ by {worst}");
    }
    Ok(())
}

/// Zero-element inputs on CUDA through every entry and the references: each returns tensors
/// of the right shapes (candle 0.11 cannot allocate 0 bytes there, so the crate's empty
/// outputs are views of a one-element buffer; session 41's CUDA panic hunt found the
/// references and `attention_backward` returning a driver error instead), and a problem whose
/// LSE would outgrow the machine's memory is an error, not a process killed for memory.
#[test]
fn gpu_empty_inputs() -> Result<()> {
    use candle_core::Context;
    use candle_fused_attn::{attention_ref_varlen, attention_varlen, attention_varlen_with_lse, Varlen};
    let Some(dev) = cuda_device("gpu_empty_inputs") else { return Ok(()) };
    let empty = |dims: &[usize], dtype: DType| -> Result<Tensor> {
        let n = dims.iter().product::<usize>();
        assert_eq!(n, 0);
        Tensor::zeros(1, dtype, &dev)?.narrow(0, 0, 0)?.reshape(dims)
    };
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let p = AttnParams::new(0.25).causal(true);
        // No queries, then no batch: outputs and gradients of q's and k's shapes.
        for (qd, kd) in [([2usize, 0, 4, 16], [2usize, 5, 2, 16]), ([0, 3, 4, 16], [0, 5, 2, 16])] {
            let q = empty(&qd, dtype)?;
            let k = if kd.iter().product::<usize>() == 0 {
                empty(&kd, dtype)?
            } else {
                Tensor::randn(0f32, 1., &kd[..], &dev)?.to_dtype(dtype)?
            };
            let at = |what: &str| format!("{what}: {dtype:?} q {qd:?} k {kd:?}");
            let (o, lse) = attention_with_lse(&q, &k, &k, &p).context(at("attention_with_lse"))?;
            assert_eq!((o.dims(), lse.dims()), (&qd[..], &[qd[0], qd[2], qd[1]][..]));
            let (dq, dk, dv) = attention_backward(&q, &k, &k, &o, &o, &lse, &p).context(at("attention_backward"))?;
            assert_eq!((dq.dims(), dk.dims(), dv.dims()), (&qd[..], &kd[..], &kd[..]));
            if dk.elem_count() > 0 {
                // (candle's own kernels cannot run on empty tensors on CUDA.)
                assert_eq!(dk.to_dtype(DType::F32)?.abs()?.sum_all()?.to_scalar::<f32>()?, 0.0, "{}", at("dk"));
            }
            assert_eq!(attention_ref(&q, &k, &k, &p).context(at("attention_ref"))?.dims(), &qd[..]);
            let lse_ref = candle_fused_attn::attention_ref_lse(&q, &k, &k, &p).context(at("attention_ref_lse"))?;
            assert_eq!(lse_ref.dims(), &[qd[0], qd[2], qd[1]][..]);
            let op = candle_fused_attn::FlashAttn {
                softmax_scale: 0.25,
                alibi_slopes: None,
                window_size_left: None,
                window_size_right: Some(0),
                softcap: None,
            };
            assert_eq!(q.apply_op3(&k, &k, op).context(at("FlashAttn"))?.dims(), &qd[..]);
        }
        // A packed batch of sequences without queries, one without keys too.
        let (q, k) = (empty(&[0, 4, 16], dtype)?, Tensor::randn(0f32, 1., (7, 2, 16), &dev)?.to_dtype(dtype)?);
        let vl = Varlen::new(&Tensor::new(&[0u32, 0, 0], &dev)?, &Tensor::new(&[0u32, 7, 7], &dev)?, 0, 7);
        let (o, lse) = attention_varlen_with_lse(&q, &k, &k, &vl, &p).context("attention_varlen_with_lse")?;
        assert_eq!((o.dims(), lse.dims()), (&[0, 4, 16][..], &[4, 0][..]));
        assert_eq!(attention_varlen(&q, &k, &k, &vl, &p).context("attention_varlen")?.dims(), &[0, 4, 16]);
        assert_eq!(attention_ref_varlen(&q, &k, &k, &vl, &p).context("attention_ref_varlen")?.dims(), &[0, 4, 16]);
    }
    // head_dim 0 with (batch, heads) = 2^42: the LSE alone would be 16 TiB.
    let q = empty(&[1 << 21, 1, 1 << 21, 0], DType::F32)?;
    let e = attention_with_lse(&q, &q, &q, &AttnParams::new(0.25)).unwrap_err().to_string();
    assert!(e.contains("the LSE") && e.contains("memory"), "{e}");
    Ok(())
}

/// Large softmax scales on both kernel generations, every dtype, dense and packed, against the
/// f64 reference (a one-hot softmax at the largest; the CPU path is right at every scale, as
/// `large_scale_keeps_accuracy` in tests/cpu.rs checks). Session 41's CUDA panic hunt found NaN
/// outputs at scale 1e30, and lab_scale_range found the 16-bit prefill wrong from scale 1e7
/// (f16) and 1e8 (bf16): NaN and rows of zeros, from the plain kernels' exp2 fold (params.cuh,
/// `kFattnPrescaleAboveLog2`). Forward only: the backward recomputes P from the rounded LSE,
/// so its gradients at such scales are outside f32's reach on every device (README).
#[test]
fn gpu_large_scale() -> Result<()> {
    use candle_fused_attn::{attention_varlen, Varlen};
    let Some(dev) = cuda_device("gpu_large_scale") else { return Ok(()) };
    let cpu = Device::Cpu;
    let mut checked = 0;
    for &(sq, h, hkv, sk, d) in
        &[(130usize, 4usize, 2usize, 200usize, 64usize), (70, 2, 2, 90, 128), (33, 2, 1, 40, 512)]
    {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let q = Tensor::randn(0f32, 1., (1, sq, h, d), &cpu)?.to_dtype(dtype)?;
            let k = Tensor::randn(0f32, 1., (1, sk, hkv, d), &cpu)?.to_dtype(dtype)?;
            let v = Tensor::randn(0f32, 1., (1, sk, hkv, d), &cpu)?.to_dtype(dtype)?;
            let (qg, kg, vg) = (q.to_device(&dev)?, k.to_device(&dev)?, v.to_device(&dev)?);
            for scale in [0.1f32, 1e3, 1e6, 1e7, 1e8, 1e9, 1e12, 1e20, 1e30] {
                for causal in [false, true] {
                    let p = AttnParams::new(scale).causal(causal);
                    let f64s = |t: &Tensor| t.to_dtype(DType::F64);
                    let want_t = attention_ref(&f64s(&q)?, &f64s(&k)?, &f64s(&v)?, &p)?;
                    let want = to_f64_vec(&want_t)?;
                    let err = |got: &[f64]| {
                        got.iter()
                            .zip(&want)
                            .map(|(a, b)| if (a - b).is_nan() { f64::INFINITY } else { (a - b).abs() })
                            .fold(0.0, f64::max)
                    };
                    // The sweeps' rule: 2 × the naive error in the same dtype + the derived floor,
                    // whose score term grows with the scale (at the largest it leaves NaN and
                    // rows of zeros to catch, which is what the folded exponent produced).
                    let naive = err(&to_f64_vec(&attention_ref(&q, &k, &v, &p)?)?);
                    let tol = 2.0 * naive + common::floor(dtype, &FloorInputs::new(&q, &k, &v, &want_t, scale)?);
                    let cu_q = Tensor::new(&[0u32, sq as u32], &dev)?;
                    let cu_k = Tensor::new(&[0u32, sk as u32], &dev)?;
                    let vl = Varlen::new(&cu_q, &cu_k, sq, sk);
                    for kernels in [CudaKernels::Auto, CudaKernels::Sm80] {
                        let dense = with_cuda_kernels(kernels, || attention(&qg, &kg, &vg, &p))?;
                        let packed = with_cuda_kernels(kernels, || {
                            attention_varlen(&qg.squeeze(0)?, &kg.squeeze(0)?, &vg.squeeze(0)?, &vl, &p)
                        })?;
                        for (what, got) in [("dense", dense), ("packed", packed)] {
                            let got = to_f64_vec(&got)?;
                            let worst = err(&got);
                            let zero_rows = got.chunks(d).filter(|r| r.iter().all(|x| *x == 0.0)).count();
                            assert!(
                                worst <= tol && zero_rows == 0,
                                "{what} {kernels:?} {dtype:?} d {d} scale {scale:e} causal {causal}: \
                                 error {worst:e} against f64 (NaN counts as inf; naive {naive:e}, \
                                 allowed {tol:e}), {zero_rows} zero rows"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    println!("gpu_large_scale: {checked} outputs right at scales 0.1-1e30");
    Ok(())
}
