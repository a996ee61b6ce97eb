//! Fine-tunes the real SmolLM2-135M on a short text that ships with the repository, with
//! this crate's fused attention or the naive one, and reports per step the loss, tokens/s
//! and peak memory.
//!
//! ```text
//! cargo run --release --example train                          # CPU, f32, fused, 20 steps of 1 × 128 tokens
//! cargo run --release --example train -- --attn compare --steps 10
//! cargo run --release --features cuda --example train -- --device cuda --dtype bf16 \
//!     --attn compare --seq-len 2048 --batch 4
//! cargo run --release --features cuda --example train -- --device cuda --dtype bf16 \
//!     --synthetic smollm2-135m --attn compare --seq-len 4096 --steps 4
//! ```
//!
//! The model is examples/llama/model.rs, shared with the llama example and tests/llama.rs:
//! the GGUF's weights (fetched by scripts/fetch-model.sh on first use) dequantized to f32
//! `Var`s, and its full-sequence causal training forward (no KV cache, differentiable ops
//! only). `--attn` swaps only the attention: `candle_fused_attn::flash_attn` on
//! `(b, s, heads, d)` with un-repeated K/V (GQA), or `candle_fused_attn::attention_ref`, the
//! naive matmul-softmax-matmul with `repeat_kv` that materialises the `s × s` scores.
//!
//! * Data: examples/data/train.txt (original prose, public domain; built into the binary,
//!   `--data` reads another file), its `#` header lines skipped, tokenized once. `--windows`
//!   sequences of `seq_len + 1` tokens are cut from it in order (the text repeats when it
//!   runs out, so any `--seq-len` works); every epoch visits them in a seeded random order,
//!   `batch` a step. A sequence's first `seq_len` tokens are the inputs, its last the
//!   targets. With the default 4 sequences each is seen several times, so the loss falls
//!   clearly instead of within the differences between sequences (about ±0.4 nats at 128
//!   tokens).
//! * Loss: next-token cross-entropy (`candle_nn::loss::cross_entropy`), the mean over the
//!   step's `batch × seq_len` tokens, computed in f32 from the logits.
//! * Optimizer: `candle_nn::AdamW` with `--lr` and candle-nn's other defaults (betas 0.9 and
//!   0.999, eps 1e-8, weight decay 0.01), on every weight, tied embedding included.
//! * `--dtype bf16` is mixed precision: the master weights and AdamW's moments stay f32;
//!   every step casts the weights to bf16 (a tracked cast, so the gradients come back to
//!   the f32 `Var`s through it), runs the forward and backward in bf16 (attention included)
//!   and upcasts the logits to f32 for the loss.
//! * After every backward pass each weight must have a gradient: a back end that drops
//!   gradients (candle ops applied without a backward do so silently) stops the run.
//! * Timing: the device is synchronized when the clock starts, after the backward pass and
//!   after the update; a step is building the model from the `Var`s, the forward pass, the
//!   loss, the backward pass and the AdamW update. tokens/s is `batch × seq_len` over the
//!   step's seconds; the forward+backward time is the part the attention is in. Step 1 also
//!   pays one-time costs (allocator growth, CUDA kernel loading), so the summary's means
//!   leave it out.
//! * Memory, per back end. CPU: the peak resident set (`VmHWM` in /proc/self/status, reset
//!   through /proc/self/clear_refs when the back end starts) and its growth over the
//!   resident set then, when the f32 weights are resident. AdamW's moments are zero pages
//!   that the OS maps only when step 1 first writes them, so the growth counts them (8
//!   bytes a parameter) with the gradients, activations and temporaries. CUDA: the device
//!   memory pool's high-water mark of bytes in use (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`; candle
//!   allocates with `cuMemAllocAsync` from that pool), reset when the back end starts, and
//!   its growth over the bytes in use then (weights and moments included, so the growth is
//!   gradients, activations and temporaries); each line also gives the driver's view,
//!   total − free from `cuMemGetInfo` (every process, the pool's reserve included).
//! * `--attn compare` trains the fused back end, then the naive one, each from freshly
//!   loaded weights and the same data order, prints their losses side by side, and fails
//!   unless the first step's losses agree within the dtype's tolerance (see
//!   [`first_step_tolerance`]). Both run in one process; on the CPU the allocator may keep
//!   memory the first freed (it is asked to give it back), so for CPU memory figures run
//!   each back end on its own.
//! * The run fails unless the loss fell: the mean of the last 3 steps' losses must be below
//!   the first step's (real weights only; see `--synthetic`).
//! * `--synthetic smollm2-135m|llama3-8b|llama2-7b` needs no GGUF and no tokenizer (for
//!   machines the 98 MB file cannot reach): random f32 `Var`s at that model's shapes
//!   (`TrainableWeights::synthetic`: uniform with variance 1/fan_in, norms ones, seeded by
//!   `--seed`, the same for both back ends of a compare run), and `--windows` sequences of
//!   random token ids drawn uniformly from the vocabulary by a generator seeded by `--seed`.
//!   There is nothing to learn in such data beyond memorising the few sequences, so the
//!   loss (near ln(vocab) and above, as the random weights' logits are not calibrated) need
//!   not fall much: such a run is a throughput and memory check, its losses are printed,
//!   the loss-fell check is skipped (with a note), and the compare check of the first
//!   step's losses still applies. Any `--seq-len` and `--batch` may be asked for; memory is
//!   the limit (the naive back end keeps `batch × heads × seq_len²` scores per layer).

// The llama example's modules; much of them (the KV cache, generation) is not used here.
#[path = "llama/fetch.rs"]
mod fetch;
#[allow(dead_code)]
#[path = "llama/model.rs"]
mod model;
#[allow(dead_code)]
#[path = "llama/tokenizer.rs"]
mod tokenizer;

use std::path::PathBuf;
use std::time::Instant;

use candle_core::{bail, DType, Device, Result, Tensor, Var};
use candle_fused_attn::AttnParams;
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use clap::{CommandFactory, Parser, ValueEnum};
use rand::seq::SliceRandom;
use rand::SeedableRng;

use model::{Llama, TrainableWeights};
use tokenizer::GgufTokenizer;

/// The corpus that ships with the repository: original prose, public domain (see its header).
const CORPUS: &str = include_str!("data/train.txt");
const CORPUS_NAME: &str = "examples/data/train.txt";

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DeviceArg {
    Cpu,
    Cuda,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DTypeArg {
    F32,
    Bf16,
}

/// The model shapes `--synthetic` builds random weights at.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum SyntheticArg {
    #[value(name = "smollm2-135m")]
    Smollm2_135m,
    #[value(name = "llama3-8b")]
    Llama3_8b,
    #[value(name = "llama2-7b")]
    Llama2_7b,
}

impl SyntheticArg {
    fn config(self) -> (model::Config, &'static str) {
        match self {
            SyntheticArg::Smollm2_135m => (model::Config::smollm2_135m(), "synthetic smollm2-135m"),
            SyntheticArg::Llama3_8b => (model::Config::llama3_8b(), "synthetic llama3-8b"),
            SyntheticArg::Llama2_7b => (model::Config::llama2_7b(), "synthetic llama2-7b"),
        }
    }
}

/// Where a back end's trainable weights come from.
enum WeightSource {
    Gguf(PathBuf),
    Synthetic(model::Config),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AttnArg {
    Fused,
    Naive,
    Compare,
}

/// The attention a training run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Fused,
    Naive,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Fused => "fused",
            Backend::Naive => "naive",
        }
    }

    /// Causal attention on q `(b, s, heads, d)` and un-repeated k, v `(b, s, kv_heads, d)`.
    fn attend(self, q: &Tensor, k: &Tensor, v: &Tensor, scale: f32) -> Result<Tensor> {
        match self {
            Backend::Fused => candle_fused_attn::flash_attn(q, k, v, scale, true),
            Backend::Naive => candle_fused_attn::attention_ref(q, k, v, &AttnParams::new(scale).causal(true)),
        }
    }
}

/// Fine-tunes SmolLM2-135M on a shipped text (or random weights on random token ids, with
/// --synthetic) with fused or naive attention, reporting loss, tokens/s and peak memory per step.
#[derive(Parser, Debug)]
#[command(name = "train", version)]
struct Args {
    /// Where to train; `cuda` needs a build with `--features cuda`.
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    device: DeviceArg,

    /// The compute dtype. bf16 is mixed precision: f32 master weights and optimizer state,
    /// bf16 forward and backward, f32 loss.
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,

    /// The attention: this crate's fused op, the naive reference (`attention_ref`), or both
    /// in turn from the same weights and data, with their losses compared.
    #[arg(long, value_enum, default_value_t = AttnArg::Fused)]
    attn: AttnArg,

    /// Tokens per training sequence (the attention's context length).
    #[arg(long, default_value_t = 128)]
    seq_len: usize,

    /// Sequences per step.
    #[arg(long, default_value_t = 1)]
    batch: usize,

    /// Optimizer steps (at least 2: the run checks that the loss fell).
    #[arg(long, default_value_t = 20)]
    steps: usize,

    /// AdamW's learning rate.
    #[arg(long, default_value_t = 1e-4)]
    lr: f64,

    /// How many distinct sequences of `seq-len + 1` tokens to train on, cut in order from
    /// the text (which repeats when it runs out); 0: as many as the text fills. Each epoch
    /// visits them in a seeded random order. With few of them every one is seen several
    /// times, so the fall of the loss is not lost in the differences between sequences.
    #[arg(long, default_value_t = 4)]
    windows: usize,

    /// Seed of the data order (and, with --synthetic, of the weights and token ids).
    #[arg(long, default_value_t = 299_792_458)]
    seed: u64,

    /// A LLaMA-architecture GGUF file; the default is SmolLM2-135M-Instruct Q4_1,
    /// downloaded on first use by scripts/fetch-model.sh.
    #[arg(long, value_name = "PATH", conflicts_with = "synthetic")]
    model: Option<PathBuf>,

    /// A UTF-8 text file to train on instead of the shipped corpus (examples/data/train.txt).
    #[arg(long, value_name = "PATH", conflicts_with = "synthetic")]
    data: Option<PathBuf>,

    /// Random weights at these shapes and random token ids instead of a GGUF and text: a
    /// throughput and memory run (the loss need not fall, and is not checked to).
    #[arg(long, value_enum)]
    synthetic: Option<SyntheticArg>,
}

/// Prints a clap-style usage error (no backtrace) and exits with status 2.
fn usage_error(msg: &str) -> ! {
    Args::command().error(clap::error::ErrorKind::InvalidValue, msg).exit()
}

fn main() {
    match run() {
        Ok(failures) if failures.is_empty() => {}
        Ok(failures) => {
            for f in failures {
                eprintln!("FAILED: {f}");
            }
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// Trains as the flags say; returns the checks that failed (none when all passed).
fn run() -> Result<Vec<String>> {
    let args = Args::parse();
    if args.seq_len == 0 || args.batch == 0 {
        usage_error("--seq-len and --batch must be at least 1")
    }
    if args.steps < 2 {
        usage_error("--steps must be at least 2 (the run checks that the loss fell)")
    }
    if !(args.lr > 0.0 && args.lr.is_finite()) {
        usage_error("--lr must be a positive number")
    }
    let device = match args.device {
        DeviceArg::Cpu => Device::Cpu,
        DeviceArg::Cuda if !candle_core::utils::cuda_is_available() => {
            usage_error("--device cuda: this binary was built without CUDA support; rebuild with `--features cuda`")
        }
        DeviceArg::Cuda => Device::new_cuda(0)?,
    };
    let dtype = match args.dtype {
        DTypeArg::F32 => DType::F32,
        DTypeArg::Bf16 => DType::BF16,
    };

    let (source, cfg, model_name, batches) = match args.synthetic {
        Some(which) => {
            let (cfg, name) = which.config();
            let batches = Batches::synthetic(cfg.vocab_size, &args)?;
            println!(
                "data: {} windows of {} + 1 random token ids (seed {}); {} steps of {} × {} tokens ({:.1} epochs)",
                batches.windows.len(),
                args.seq_len,
                args.seed,
                args.steps,
                args.batch,
                args.seq_len,
                (args.steps * args.batch) as f64 / batches.windows.len() as f64
            );
            let params = cfg.num_parameters();
            println!(
                "{name}: {params} parameters; f32 weights, gradients and AdamW moments take {} before activations",
                gib(16 * params as u64)
            );
            (WeightSource::Synthetic(cfg.clone()), cfg, name.to_string(), batches)
        }
        None => {
            let (model_path, model_name) = match &args.model {
                Some(p) => (p.clone(), p.display().to_string()),
                None => (fetch::default_model_path()?, fetch::DEFAULT_MODEL.to_string()),
            };
            let (content, _) = model::open_gguf(&model_path)?;
            let tokenizer = GgufTokenizer::from_gguf(&content)?;
            let (text, text_name) = match &args.data {
                Some(p) => (
                    std::fs::read_to_string(p)
                        .map_err(|e| candle_core::Error::Msg(format!("cannot read --data {}: {e}", p.display())))?,
                    p.display().to_string(),
                ),
                None => (CORPUS.to_string(), CORPUS_NAME.to_string()),
            };
            // A blank line after the text separates its repeats.
            let tokens = tokenizer.encode(&format!("{}\n\n", strip_header(&text).trim_end()))?;
            let batches = Batches::new(&tokens, args.seq_len, args.batch, args.windows, args.seed)?;
            println!(
                "data: {text_name}: {} tokens; {} windows of {} + 1 tokens; {} steps of {} × {} tokens ({:.1} epochs)",
                tokens.len(),
                batches.windows.len(),
                args.seq_len,
                args.steps,
                args.batch,
                args.seq_len,
                (args.steps * args.batch) as f64 / batches.windows.len() as f64
            );
            let cfg = model::Config::from_gguf(&content)?;
            (WeightSource::Gguf(model_path), cfg, model_name, batches)
        }
    };
    println!(
        "model: {model_name}: {} layers, hidden {}, {} heads / {} kv heads, head dim {}; device {}, dtype {:?}, AdamW lr {}",
        cfg.num_layers,
        cfg.hidden_size,
        cfg.num_heads,
        cfg.num_kv_heads,
        cfg.head_dim,
        device_name(&device),
        dtype,
        args.lr
    );
    if args.seq_len > cfg.context_length {
        println!("note: --seq-len {} exceeds the model's trained context ({})", args.seq_len, cfg.context_length);
    }

    let backends = match args.attn {
        AttnArg::Fused => vec![Backend::Fused],
        AttnArg::Naive => vec![Backend::Naive],
        AttnArg::Compare => vec![Backend::Fused, Backend::Naive],
    };
    let mut runs = Vec::new();
    for backend in backends {
        println!("--- {} attention ---", backend.name());
        let job = Job { backend, args: &args, device: &device, dtype, source: &source, batches: &batches };
        match train(&job) {
            Ok(r) => runs.push((backend, Ok(r))),
            Err(e) if args.attn == AttnArg::Compare => {
                println!("failed: {}", first_line(&e));
                runs.push((backend, Err(e)));
            }
            Err(e) => return Err(e),
        }
    }

    print_summary(&runs, &args);
    let mut failures = Vec::new();
    for (backend, run) in &runs {
        match run {
            Ok(r) => {
                let losses = r.losses();
                let (first, (tail, n)) = (losses[0], tail_mean(&losses));
                if args.synthetic.is_some() {
                    println!(
                        "{}: loss {first:.4} at step 1, {tail:.4} over the last {n} steps (not checked: random weights and token ids need not learn)",
                        backend.name()
                    );
                } else if tail < first {
                    println!(
                        "{}: the loss fell: {first:.4} at step 1, {tail:.4} over the last {n} steps",
                        backend.name()
                    );
                } else {
                    failures.push(format!(
                        "{}: the loss did not fall: {first:.4} at step 1, mean {tail:.4} over the last {n} steps",
                        backend.name()
                    ));
                }
            }
            Err(e) => failures.push(first_line(e)),
        }
    }
    if let [(_, Ok(fused)), (_, Ok(naive))] = runs.as_slice() {
        if let Err(e) = compare_losses(fused, naive, dtype) {
            failures.push(e);
        }
    }
    Ok(failures)
}

/// Drops the header: the lines at the top of the text that start with `#`.
fn strip_header(text: &str) -> &str {
    let mut rest = text;
    while rest.starts_with('#') {
        rest = match rest.find('\n') {
            Some(i) => &rest[i + 1..],
            None => "",
        };
    }
    rest.trim_start_matches('\n')
}

/// The sequences a run trains on: `count` windows of `seq_len + 1` tokens cut in order from
/// the text, which repeats when it runs out; every epoch visits them in a seeded random
/// order, `batch` windows a step.
struct Batches {
    windows: Vec<Vec<u32>>,
    seq_len: usize,
    batch: usize,
    seed: u64,
}

impl Batches {
    /// `count == 0`: as many windows as the text fills (at least one).
    fn new(tokens: &[u32], seq_len: usize, batch: usize, count: usize, seed: u64) -> Result<Self> {
        if tokens.is_empty() {
            bail!("the training text encodes to no tokens")
        }
        let count = if count == 0 { (tokens.len().saturating_sub(1) / seq_len).max(1) } else { count };
        if count < batch {
            bail!("{count} windows cannot fill a batch of {batch}: pass --windows {batch} or more")
        }
        let windows =
            (0..count).map(|w| (0..=seq_len).map(|j| tokens[(w * seq_len + j) % tokens.len()]).collect()).collect();
        Ok(Self { windows, seq_len, batch, seed })
    }

    /// `--windows` sequences (at least `--batch`) of `seq_len + 1` token ids drawn uniformly
    /// from `0..vocab` by a generator seeded with `--seed`: the data of a `--synthetic` run.
    fn synthetic(vocab: usize, args: &Args) -> Result<Self> {
        use rand::Rng;
        let count = args.windows.max(args.batch);
        let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
        let tokens: Vec<u32> = (0..count * args.seq_len + 1).map(|_| rng.random_range(0..vocab as u32)).collect();
        Self::new(&tokens, args.seq_len, args.batch, count, args.seed)
    }

    /// The window order of the whole run: `batch` windows per step, epoch after epoch.
    fn order(&self, steps: usize) -> Vec<usize> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let mut order = Vec::with_capacity(steps * self.batch);
        while order.len() < steps * self.batch {
            let mut epoch: Vec<usize> = (0..self.windows.len()).collect();
            epoch.shuffle(&mut rng);
            order.extend(epoch);
        }
        order.truncate(steps * self.batch);
        order
    }

    /// Inputs and targets `(batch, seq_len)` u32 for the given windows.
    fn tensors(&self, windows: &[usize], device: &Device) -> Result<(Tensor, Tensor)> {
        let s = self.seq_len;
        let inputs: Vec<u32> = windows.iter().flat_map(|&w| self.windows[w][..s].iter().copied()).collect();
        let targets: Vec<u32> = windows.iter().flat_map(|&w| self.windows[w][1..].iter().copied()).collect();
        let shape = (windows.len(), s);
        Ok((Tensor::from_vec(inputs, shape, device)?, Tensor::from_vec(targets, shape, device)?))
    }
}

/// One back end's training run: everything it needs.
struct Job<'a> {
    backend: Backend,
    args: &'a Args,
    device: &'a Device,
    dtype: DType,
    source: &'a WeightSource,
    batches: &'a Batches,
}

struct StepStats {
    loss: f32,
    /// The largest |logit| (step 1 only: the compare tolerance needs it).
    max_abs_logit: Option<f32>,
    /// The whole step, and its forward and backward passes (the part the attention is in).
    secs: f64,
    fwd_bwd_secs: f64,
}

struct RunResult {
    steps: Vec<(StepStats, Memory)>,
    tokens_per_step: usize,
}

impl RunResult {
    fn losses(&self) -> Vec<f32> {
        self.steps.iter().map(|(s, _)| s.loss).collect()
    }

    fn first(&self) -> &StepStats {
        &self.steps[0].0
    }

    /// Mean seconds per step and per forward+backward, step 1 (one-time costs) left out.
    fn mean_secs(&self) -> (f64, f64) {
        let timed = &self.steps[1..];
        let n = timed.len() as f64;
        (timed.iter().map(|(s, _)| s.secs).sum::<f64>() / n, timed.iter().map(|(s, _)| s.fwd_bwd_secs).sum::<f64>() / n)
    }

    /// The last reading: each one is the peak so far.
    fn memory(&self) -> Memory {
        self.steps.last().map(|(_, m)| *m).unwrap_or_default()
    }
}

/// Loads fresh trainable weights and trains them for `--steps` steps with one back end.
fn train(job: &Job<'_>) -> Result<RunResult> {
    let Job { backend, args, device, dtype, source, batches } = *job;
    let load_start = Instant::now();
    let weights = match source {
        WeightSource::Gguf(path) => {
            let (content, mut file) = model::open_gguf(path)?;
            TrainableWeights::from_gguf(&content, &mut file, device)?
        }
        WeightSource::Synthetic(cfg) => TrainableWeights::synthetic(cfg.clone(), args.seed, device)?,
    };
    let vars: Vec<Var> = weights.vars().iter().map(|(_, v)| v.clone()).collect();
    let mut optimizer = AdamW::new(vars, ParamsAdamW { lr: args.lr, ..ParamsAdamW::default() })?;
    device.synchronize()?;
    println!(
        "{} trainable f32 parameters in {} tensors (loaded or generated in {:.1} s)",
        weights.num_parameters(),
        weights.vars().len(),
        load_start.elapsed().as_secs_f64()
    );

    let order = batches.order(args.steps);
    let meter = MemoryMeter::start(device)?;
    let tokens_per_step = args.batch * args.seq_len;
    let mut steps = Vec::with_capacity(args.steps);
    for (step, windows) in order.chunks(args.batch).enumerate() {
        let (inputs, targets) = batches.tensors(windows, device)?;
        let stats = train_step(backend, &weights, &mut optimizer, &inputs, &targets, dtype, step == 0, device)
            .map_err(|e| candle_core::Error::Msg(format!("{} attention, step {}: {e}", backend.name(), step + 1)))?;
        let memory = meter.read(device)?;
        if !stats.loss.is_finite() {
            bail!("{} attention, step {}: the loss is {}", backend.name(), step + 1, stats.loss)
        }
        println!(
            "step {:>3}/{} | loss {:.4} | {:.3} s (forward+backward {:.3} s) | {:.1} tokens/s | {}",
            step + 1,
            args.steps,
            stats.loss,
            stats.secs,
            stats.fwd_bwd_secs,
            tokens_per_step as f64 / stats.secs,
            memory.describe()
        );
        steps.push((stats, memory));
    }
    Ok(RunResult { steps, tokens_per_step })
}

/// One timed optimizer step: the loss before the update and, if `want_max`, the largest
/// |logit|.
#[allow(clippy::too_many_arguments)]
fn train_step(
    backend: Backend,
    weights: &TrainableWeights,
    optimizer: &mut AdamW,
    inputs: &Tensor,
    targets: &Tensor,
    dtype: DType,
    want_max: bool,
    device: &Device,
) -> Result<StepStats> {
    device.synchronize()?;
    let start = Instant::now();
    let model = Llama::from_trainable(weights, dtype, inputs.dim(1)?)?;
    let logits = model.forward_train(inputs, |q, k, v, scale| backend.attend(q, k, v, scale))?;
    let logits = logits.flatten_to(1)?.to_dtype(DType::F32)?; // (batch · seq_len, vocab)
    let loss = candle_nn::loss::cross_entropy(&logits, &targets.flatten_all()?)?;
    let grads = loss.backward()?;
    device.synchronize()?;
    let fwd_bwd_secs = start.elapsed().as_secs_f64();
    let max_abs_logit = if want_max { Some(logits.abs()?.max_all()?.to_scalar::<f32>()?) } else { None };
    let loss_value = loss.to_scalar::<f32>()?;
    // The graph (every activation) goes before the update allocates its temporaries.
    drop((model, logits, loss));
    let missing: Vec<&str> =
        weights.vars().iter().filter(|(_, v)| grads.get(v).is_none()).map(|(n, _)| n.as_str()).collect();
    if !missing.is_empty() {
        let shown = missing.iter().take(4).copied().collect::<Vec<_>>().join(", ");
        bail!(
            "{} of {} weights got no gradient ({shown}{}): the {} attention back end dropped their gradients, so they would silently not train",
            missing.len(),
            weights.vars().len(),
            if missing.len() > 4 { ", …" } else { "" },
            backend.name()
        )
    }
    optimizer.step(&grads)?;
    drop(grads);
    device.synchronize()?;
    let secs = start.elapsed().as_secs_f64();
    Ok(StepStats { loss: loss_value, max_abs_logit, secs, fwd_bwd_secs })
}

/// The mean of the last 3 losses (of all after the first, when there are fewer) and how
/// many that is.
fn tail_mean(losses: &[f32]) -> (f32, usize) {
    let tail = &losses[losses.len().saturating_sub(3).max(1)..];
    (tail.iter().sum::<f32>() / tail.len() as f32, tail.len())
}

/// How far apart the two back ends' first-step losses may be.
///
/// Step 1 runs both from the same weights on the same batch, so their losses differ only
/// by rounding, which reaches the loss `L` (the mean over the step's `n` tokens) two ways:
/// * Through the logits. The back ends' attention outputs differ by about one rounding in
///   the compute dtype, and the rest of the network (the same ops in both runs) carries
///   that to the logits `z` as about one rounding, `u·|z|`, where `u` is the dtype's unit
///   roundoff (2^-24 for f32, 2^-8 for bf16). A token's loss, `logsumexp(z) − z[target]`,
///   then moves by at most `2·u·max|z|`, and the mean over `n` tokens divides independent
///   errors by `√n`.
/// * Through the mean itself, an f32 sum of `n` values near `L`: its roundings differ
///   between two runs with slightly different inputs by about `√n·u_f32·|L|` in the mean.
///
/// The tolerance is four times the sum: `4·(2·u·max|z|/√n + √n·u_f32·|L|)`.
fn first_step_tolerance(dtype: DType, loss: f32, max_abs_logit: f32, tokens: usize) -> f64 {
    let u = match dtype {
        DType::BF16 => 2f64.powi(-8),
        DType::F16 => 2f64.powi(-11),
        _ => 2f64.powi(-24),
    };
    let u_f32 = 2f64.powi(-24);
    let n = (tokens as f64).sqrt();
    4.0 * (2.0 * u * max_abs_logit as f64 / n + n * u_f32 * (loss as f64).abs())
}

/// Prints both back ends' losses side by side; an error when the first step's differ by
/// more than [`first_step_tolerance`].
fn compare_losses(fused: &RunResult, naive: &RunResult, dtype: DType) -> std::result::Result<(), String> {
    println!("\n| step | fused loss | naive loss | fused − naive |");
    println!("|---|---|---|---|");
    for (i, (f, n)) in fused.losses().iter().zip(&naive.losses()).enumerate() {
        println!("| {} | {f:.6} | {n:.6} | {:+.3e} |", i + 1, *f as f64 - *n as f64);
    }
    let (f, n) = (fused.first().loss as f64, naive.first().loss as f64);
    let max_abs_logit = fused.first().max_abs_logit.unwrap_or(0.0).max(naive.first().max_abs_logit.unwrap_or(0.0));
    let tol = first_step_tolerance(dtype, naive.first().loss, max_abs_logit, naive.tokens_per_step);
    let diff = (f - n).abs();
    if diff <= tol {
        println!(
            "step 1: fused and naive losses agree: |{f:.6} − {n:.6}| = {diff:.3e} ≤ {tol:.3e} ({dtype:?} tolerance)"
        );
        Ok(())
    } else {
        Err(format!(
            "step 1: fused and naive losses differ by {diff:.3e} ({f:.6} vs {n:.6}), more than the {dtype:?} tolerance {tol:.3e}"
        ))
    }
}

fn print_summary(runs: &[(Backend, Result<RunResult>)], args: &Args) {
    println!(
        "\n=== summary: device {}, dtype {:?}, {} steps of {} × {} tokens ===",
        match args.device {
            DeviceArg::Cpu => "cpu",
            DeviceArg::Cuda => "cuda",
        },
        args.dtype,
        args.steps,
        args.batch,
        args.seq_len
    );
    println!("(times: means over steps 2.., step 1 pays one-time costs)");
    println!("| attn | step s | forward+backward s | tokens/s | peak memory | growth | first loss | last loss |");
    println!("|---|---|---|---|---|---|---|---|");
    for (backend, run) in runs {
        match run {
            Ok(r) => {
                let (step_secs, fwd_bwd_secs) = r.mean_secs();
                let memory = r.memory();
                let losses = r.losses();
                println!(
                    "| {} | {step_secs:.3} | {fwd_bwd_secs:.3} | {:.1} | {} | {} | {:.4} | {:.4} |",
                    backend.name(),
                    r.tokens_per_step as f64 / step_secs,
                    gib(memory.peak),
                    gib(memory.growth()),
                    losses[0],
                    losses[losses.len() - 1]
                )
            }
            Err(e) => println!("| {} | failed: {} | | | | | | |", backend.name(), first_line(e)),
        }
    }
}

fn device_name(device: &Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

fn first_line(e: &candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// A memory reading in bytes: the peak since the back end started, the baseline when it
/// started and, on CUDA, the driver's used-memory figure.
#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    peak: u64,
    baseline: u64,
    driver_used: Option<u64>,
}

impl Memory {
    fn growth(&self) -> u64 {
        self.peak.saturating_sub(self.baseline)
    }

    fn describe(&self) -> String {
        let mut s = format!("peak {} (+{} over the start)", gib(self.peak), gib(self.growth()));
        if let Some(used) = self.driver_used {
            s += &format!(" | device used {}", gib(used));
        }
        s
    }
}

/// Peak memory of one back end's run (see the file's docs for what is measured).
enum MemoryMeter {
    Cpu {
        baseline: u64,
    },
    #[cfg(feature = "cuda")]
    Cuda {
        pool: candle_core::cuda_backend::cudarc::driver::sys::CUmemoryPool,
        baseline: u64,
    },
}

impl MemoryMeter {
    fn start(device: &Device) -> Result<Self> {
        match device {
            Device::Cpu => {
                release_free_heap();
                // Writing 5 resets VmHWM to the current RSS (Linux ≥ 4.0), so that an earlier
                // back end's peak in this process does not hide this one's.
                if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
                    println!("note: cannot reset the peak RSS ({e}); peaks are since the process started");
                }
                Ok(MemoryMeter::Cpu { baseline: proc_status_bytes("VmRSS")? })
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(cuda) => cuda_pool::start(cuda),
            _ => bail!("memory metering supports the CPU and CUDA devices only"),
        }
    }

    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    fn read(&self, device: &Device) -> Result<Memory> {
        match self {
            MemoryMeter::Cpu { baseline } => {
                Ok(Memory { peak: proc_status_bytes("VmHWM")?, baseline: *baseline, driver_used: None })
            }
            #[cfg(feature = "cuda")]
            MemoryMeter::Cuda { pool, baseline } => cuda_pool::read(device, *pool, *baseline),
        }
    }
}

/// Hands the allocator's free heap pages back to the OS, so that memory an earlier back end
/// freed is not resident (and not reused unseen) when the next one's metering starts.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim takes no pointers and only releases free memory; it is
        // safe to call at any time from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// A `/proc/self/status` field given in kB, in bytes.
fn proc_status_bytes(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| candle_core::Error::Msg(format!("cannot read /proc/self/status (Linux only): {e}")))?;
    let value = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    match value {
        Some(kib) => Ok(kib * 1024),
        None => bail!("/proc/self/status has no readable {field} line"),
    }
}

#[cfg(feature = "cuda")]
mod cuda_pool {
    //! The device memory pool's counters, read through the CUDA driver API.

    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    use candle_core::cuda_backend::CudaDevice;
    use candle_core::{Device, Result};

    use super::{Memory, MemoryMeter};

    fn driver_err(what: &str, e: impl std::fmt::Display) -> candle_core::Error {
        candle_core::Error::Msg(format!("{what}: {e}"))
    }

    /// Reads a 64-bit attribute of `pool`.
    fn attribute(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute) -> Result<u64> {
        let mut value: u64 = 0;
        // SAFETY: `pool` came from cuDeviceGetMemPool for this process's device and pools
        // are never destroyed here; the USED/RESERVED_MEM attributes are cuuint64_t, which
        // `value` is, and the pointer is valid for the call.
        unsafe { result::mem_pool::get_attribute(pool, attr, &mut value as *mut u64 as *mut std::ffi::c_void) }
            .map_err(|e| driver_err(&format!("cuMemPoolGetAttribute({attr:?})"), e))?;
        Ok(value)
    }

    pub(super) fn start(cuda: &CudaDevice) -> Result<MemoryMeter> {
        let stream = cuda.cuda_stream();
        let ctx = stream.context();
        ctx.bind_to_thread().map_err(|e| driver_err("binding the CUDA context", e))?;
        if !ctx.has_async_alloc() {
            candle_core::bail!(
                "this GPU has no stream-ordered memory pools, so the peak memory cannot be metered (candle allocates with cuMemAlloc here)"
            )
        }
        // SAFETY: `cu_device()` is the CUdevice the context was created for.
        let pool = unsafe { result::device::get_mem_pool(ctx.cu_device()) }
            .map_err(|e| driver_err("cuDeviceGetMemPool", e))?;
        stream.synchronize().map_err(|e| driver_err("synchronizing the stream", e))?;
        // The high-water mark can only be reset to 0; the step's first allocation raises it
        // to the bytes in use again.
        let mut zero: u64 = 0;
        // SAFETY: as in `attribute`; USED_MEM_HIGH is a cuuint64_t and may be set to 0.
        unsafe {
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                &mut zero as *mut u64 as *mut std::ffi::c_void,
            )
        }
        .map_err(|e| driver_err("resetting CU_MEMPOOL_ATTR_USED_MEM_HIGH", e))?;
        let baseline = attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok(MemoryMeter::Cuda { pool, baseline })
    }

    pub(super) fn read(device: &Device, pool: sys::CUmemoryPool, baseline: u64) -> Result<Memory> {
        device.synchronize()?;
        let peak = attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?;
        let (free, total) = result::mem_get_info().map_err(|e| driver_err("cuMemGetInfo", e))?;
        Ok(Memory { peak, baseline, driver_used: Some((total - free) as u64) })
    }
}
