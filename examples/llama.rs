//! A real LLaMA run with this crate's fused attention as a drop-in, and tokens/sec.
//!
//! ```text
//! cargo run --release --example llama                      # CPU, f32, SmolLM2-135M (fetched on first run)
//! cargo run --release --example llama -- --compare --prompt-len 2048
//! cargo run --release --features cuda --example llama -- --device cuda --dtype bf16 \
//!     --synthetic llama3-8b --prompt-len 4096 --compare
//! ```
//!
//! The model code (examples/llama/model.rs) is shared with tests/llama.rs. `--attn` swaps
//! only the attention: candle-transformers' naive matmul-softmax with `repeat_kv`, or
//! `candle_fused_attn::flash_attn` on the un-repeated K/V cache.
//!
//! Timing: the device is synchronized before every clock read. Prefill is the prompt's
//! forward pass up to the first sampled token; decode tok/s counts the tokens after the
//! first one. Each back end first runs the same prefill and one decode step untimed, so
//! kernel loading (PTX compilation on CUDA) and allocator growth are not timed and the
//! order of --compare's runs does not matter. With `--repeats N` the timed prefill and
//! decode run N times on a fresh cache and the medians are reported (text streams once).

#[path = "llama/fetch.rs"]
mod fetch;
#[path = "llama/model.rs"]
mod model;
#[path = "llama/text.rs"]
mod text;
#[path = "llama/tokenizer.rs"]
mod tokenizer;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use candle_core::{bail, DType, Device, Result, Tensor};
use clap::{CommandFactory, Parser, ValueEnum};
use rand::{Rng, SeedableRng};

use model::{Attention, Config, KvCache, Llama};
use tokenizer::GgufTokenizer;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DeviceArg {
    Cpu,
    Cuda,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DTypeArg {
    F32,
    F16,
    Bf16,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AttnArg {
    Fused,
    Naive,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SyntheticArg {
    #[value(name = "llama3-8b")]
    Llama3_8b,
    #[value(name = "llama2-7b")]
    Llama2_7b,
    #[value(name = "smollm2-135m")]
    Smollm2_135m,
}

/// Runs a LLaMA-architecture model with fused or naive attention and reports tokens/sec.
#[derive(Parser, Debug)]
#[command(name = "llama", version)]
struct Args {
    /// Where to run; `cuda` needs a build with `--features cuda`.
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    device: DeviceArg,

    /// The dtype weights, activations and the KV cache use (the naive path's attention
    /// runs in f32 whatever this is, as candle-transformers' llama does).
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,

    /// The attention implementation: this crate's fused op, or candle-transformers' naive one.
    #[arg(long, value_enum, default_value_t = AttnArg::Fused)]
    attn: AttnArg,

    /// The prompt text (raw, or the user message with --chat).
    #[arg(long, default_value = "The capital of France is", conflicts_with = "prompt_len")]
    prompt: String,

    /// Use a long prompt of exactly N tokens of real text (Pride and Prejudice, repeated);
    /// with --synthetic, N seeded random token ids.
    #[arg(long, value_name = "N")]
    prompt_len: Option<usize>,

    /// How many tokens to generate (fewer if the model emits end-of-sequence first).
    #[arg(long, default_value_t = 64)]
    sample_len: usize,

    /// Sampling temperature; 0 is greedy (argmax).
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,

    /// Seed for sampling, synthetic weights and synthetic prompts.
    #[arg(long, default_value_t = 299_792_458)]
    seed: u64,

    /// A LLaMA-architecture GGUF file; the default is SmolLM2-135M-Instruct Q4_1,
    /// downloaded on first use by scripts/fetch-model.sh.
    #[arg(long, value_name = "PATH", conflicts_with = "synthetic")]
    model: Option<PathBuf>,

    /// Random seeded weights at a real model's shapes, for throughput (no text);
    /// smollm2-135m has the default model's shapes, for machines the GGUF cannot reach.
    #[arg(long, value_enum)]
    synthetic: Option<SyntheticArg>,

    /// Run both back ends on the same prompt, print a side-by-side table and whether
    /// their token sequences match.
    #[arg(long)]
    compare: bool,

    /// Wrap the prompt in the model's ChatML template (system line from the GGUF).
    #[arg(long, conflicts_with_all = ["prompt_len", "synthetic"])]
    chat: bool,

    /// Keep generating past end-of-sequence, so every run decodes exactly --sample-len tokens.
    #[arg(long)]
    ignore_eos: bool,

    /// Feed the prompt in chunks of N tokens (both back ends alike). The naive path holds
    /// a heads × chunk × context f32 score matrix; chunking bounds it on long prompts.
    #[arg(long, value_name = "N")]
    prefill_chunk: Option<usize>,

    /// Time the prefill and the decode N times (fresh KV cache, same seed, so the same
    /// tokens each time) and report the median of each; the text streams on the first.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeats: usize,
}

/// One back end's run: its tokens and clocks (medians over --repeats).
struct RunResult {
    attention: Attention,
    prompt_tokens: usize,
    prefill_secs: f64,
    generated: Vec<u32>,
    decode_secs: f64,
    repeats: usize,
}

impl RunResult {
    fn prefill_tok_s(&self) -> f64 {
        self.prompt_tokens as f64 / self.prefill_secs
    }

    /// Tokens after the first one, which the prefill produced.
    fn decode_tokens(&self) -> usize {
        self.generated.len().saturating_sub(1)
    }

    fn decode_tok_s(&self) -> Option<f64> {
        (self.decode_tokens() > 0).then(|| self.decode_tokens() as f64 / self.decode_secs)
    }
}

struct Sampler {
    temperature: f64,
    rng: rand::rngs::StdRng,
}

impl Sampler {
    fn new(temperature: f64, seed: u64) -> Self {
        Self { temperature, rng: rand::rngs::StdRng::seed_from_u64(seed) }
    }

    fn next(&mut self, logits: &Tensor) -> Result<u32> {
        if self.temperature <= 0.0 {
            return model::argmax(logits);
        }
        let probs = candle_nn::ops::softmax_last_dim(&(logits / self.temperature)?)?.to_vec1::<f32>()?;
        let mut r: f32 = self.rng.random();
        for (id, p) in probs.iter().enumerate() {
            r -= p;
            if r <= 0.0 {
                return Ok(id as u32);
            }
        }
        Ok(probs.len() as u32 - 1) // r was left over by rounding
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let device = match args.device {
        DeviceArg::Cpu => Device::Cpu,
        DeviceArg::Cuda if !candle_core::utils::cuda_is_available() => {
            usage_error("--device cuda: this binary was built without CUDA support; rebuild with `--features cuda`")
        }
        DeviceArg::Cuda => Device::new_cuda(0)?,
    };
    let dtype = match args.dtype {
        DTypeArg::F32 => DType::F32,
        DTypeArg::F16 => DType::F16,
        DTypeArg::Bf16 => DType::BF16,
    };
    if args.sample_len == 0 {
        usage_error("--sample-len must be at least 1")
    }
    if args.prefill_chunk == Some(0) || args.prompt_len == Some(0) || args.repeats == 0 {
        usage_error("--prefill-chunk, --prompt-len and --repeats must be at least 1")
    }

    let load_start = Instant::now();
    let (model, tokenizer, prompt, model_name) = match args.synthetic {
        Some(which) => {
            let (cfg, name) = match which {
                SyntheticArg::Llama3_8b => (Config::llama3_8b(), "synthetic llama3-8b"),
                SyntheticArg::Llama2_7b => (Config::llama2_7b(), "synthetic llama2-7b"),
                SyntheticArg::Smollm2_135m => (Config::smollm2_135m(), "synthetic smollm2-135m"),
            };
            let prompt_len = args.prompt_len.unwrap_or(128);
            let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
            let prompt: Vec<u32> = (0..prompt_len).map(|_| rng.random_range(0..cfg.vocab_size as u32)).collect();
            eprintln!(
                "building {name}: {:.2} B random parameters, {:.1} GB in {dtype:?}",
                cfg.num_parameters() as f64 / 1e9,
                (cfg.num_parameters() * dtype.size_in_bytes()) as f64 / 1e9
            );
            let model = Llama::synthetic(cfg, args.seed, &device, dtype, prompt_len + args.sample_len)?;
            (model, None, prompt, name.to_string())
        }
        None => {
            let (path, name) = match &args.model {
                Some(p) => (p.clone(), p.display().to_string()),
                None => (fetch::default_model_path()?, fetch::DEFAULT_MODEL.to_string()),
            };
            let (content, mut file) = model::open_gguf(&path)?;
            let tokenizer = GgufTokenizer::from_gguf(&content)?;
            let prompt = match args.prompt_len {
                Some(n) => text::long_prompt(n, |s| tokenizer.encode(s))?,
                None if args.chat => tokenizer.encode(&tokenizer.chat_prompt(&args.prompt))?,
                None => tokenizer.encode(&args.prompt)?,
            };
            let model = Llama::from_gguf(&content, &mut file, &device, dtype, prompt.len() + args.sample_len)?;
            (model, Some(tokenizer), prompt, name)
        }
    };
    if prompt.is_empty() {
        bail!("the prompt encodes to no tokens")
    }
    device.synchronize()?;
    let cfg = model.config();
    eprintln!(
        "model: {model_name}: {} layers, hidden {}, {} heads / {} kv heads, head dim {}, rope θ {} (loaded in {:.1} s)",
        cfg.num_layers,
        cfg.hidden_size,
        cfg.num_heads,
        cfg.num_kv_heads,
        cfg.head_dim,
        cfg.rope_theta,
        load_start.elapsed().as_secs_f64()
    );
    if prompt.len() + args.sample_len > cfg.context_length {
        eprintln!(
            "note: {} positions exceed the model's trained context ({}); throughput is valid, text quality is not",
            prompt.len() + args.sample_len,
            cfg.context_length
        );
    }

    let backends = if args.compare {
        vec![Attention::Fused, Attention::Naive]
    } else {
        vec![match args.attn {
            AttnArg::Fused => Attention::Fused,
            AttnArg::Naive => Attention::Naive,
        }]
    };
    let mut results = Vec::new();
    for attention in backends {
        println!("--- {} attention ---", attention.name());
        let job = Job {
            model: &model,
            tokenizer: tokenizer.as_ref(),
            prompt: &prompt,
            attention,
            args: &args,
            device: &device,
        };
        let outcome = run(&job);
        match outcome {
            Ok(r) => {
                print_stats(&r, &args, &device);
                results.push((attention, Ok(r)));
            }
            Err(e) if args.compare => {
                println!("\n{} attention failed: {e}", attention.name());
                results.push((attention, Err(e)));
            }
            Err(e) => return Err(e),
        }
    }
    if args.compare {
        print_comparison(&results, &args, &device);
    }
    Ok(())
}

/// Prints a clap-style usage error (no backtrace) and exits with status 2.
fn usage_error(msg: &str) -> ! {
    Args::command().error(clap::error::ErrorKind::InvalidValue, msg).exit()
}

/// One back end's generation: the model, its tokenizer, the prompt and the flags.
struct Job<'a> {
    model: &'a Llama,
    tokenizer: Option<&'a GgufTokenizer>,
    prompt: &'a [u32],
    attention: Attention,
    args: &'a Args,
    device: &'a Device,
}

/// Warm-up, then prefill and decode with one back end, streaming text as it comes.
fn run(job: &Job<'_>) -> Result<RunResult> {
    let Job { model, prompt, attention, args, device, .. } = *job;
    // Warm-up, untimed: this run's prefill and one decode step, so that kernel loading (PTX
    // compilation on CUDA) and the allocators' first growth to this run's sizes are not
    // timed, and --compare's second back end has no head start over the first.
    let chunk = args.prefill_chunk.unwrap_or(prompt.len());
    let mut warm_cache = KvCache::new(model.config(), prompt.len() + 1, model.dtype(), device)?;
    let logits = prefill(model, prompt, chunk, &mut warm_cache, attention)?;
    model.forward(&[model::argmax(&logits)?], &mut warm_cache, attention)?;
    drop(warm_cache);

    let mut prefill_times = Vec::with_capacity(args.repeats);
    let mut decode_times = Vec::with_capacity(args.repeats);
    let mut generated = Vec::new();
    for repeat in 0..args.repeats {
        let (tokens, prefill_secs, decode_secs) = timed_generation(job, repeat == 0)?;
        if repeat > 0 && tokens != generated {
            bail!("repeat {repeat} generated different tokens than the first run: the run is not deterministic");
        }
        generated = tokens;
        prefill_times.push(prefill_secs);
        decode_times.push(decode_secs);
    }
    Ok(RunResult {
        attention,
        prompt_tokens: prompt.len(),
        prefill_secs: median(&mut prefill_times),
        generated,
        decode_secs: median(&mut decode_times),
        repeats: args.repeats,
    })
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// One timed prefill and decode on a fresh cache: the tokens, prefill seconds and decode
/// seconds. `show` streams the text.
fn timed_generation(job: &Job<'_>, show: bool) -> Result<(Vec<u32>, f64, f64)> {
    let Job { model, tokenizer, prompt, attention, args, device } = *job;
    let chunk = args.prefill_chunk.unwrap_or(prompt.len());
    let capacity = prompt.len() + args.sample_len;
    let mut cache = KvCache::new(model.config(), capacity, model.dtype(), device)?;
    let mut sampler = Sampler::new(args.temperature, args.seed);
    let mut stream = tokenizer.filter(|_| show).map(|t| t.tokenizer.decode_stream(false));
    if show {
        match (tokenizer, args.prompt_len) {
            (Some(t), None) => print!("{}", t.decode(prompt)?),
            _ => print!("[{} prompt tokens{}]", prompt.len(), long_prompt_source(args)),
        }
        std::io::stdout().flush().ok();
    }
    let stops = |id: u32| !args.ignore_eos && tokenizer.is_some_and(|t| t.stop_ids.contains(&id));

    device.synchronize()?;
    let start = Instant::now();
    let mut next = sampler.next(&prefill(model, prompt, chunk, &mut cache, attention)?)?;
    device.synchronize()?;
    let prefill_secs = start.elapsed().as_secs_f64();

    let mut generated = Vec::with_capacity(args.sample_len);
    let start = Instant::now();
    loop {
        if stops(next) {
            break;
        }
        generated.push(next);
        if let Some(s) = stream.as_mut() {
            if let Some(text) = s.step(next).map_err(|e| candle_core::Error::Msg(format!("tokenizer: {e}")))? {
                print!("{text}");
                std::io::stdout().flush().ok();
            }
        }
        if generated.len() == args.sample_len {
            break;
        }
        let logits = model.forward(&[next], &mut cache, attention)?;
        next = sampler.next(&logits)?;
    }
    device.synchronize()?;
    let decode_secs = start.elapsed().as_secs_f64();
    if show {
        println!();
    }
    Ok((generated, prefill_secs, decode_secs))
}

/// The prompt's forward pass in `chunk`-token pieces; the logits after its last token.
fn prefill(model: &Llama, prompt: &[u32], chunk: usize, cache: &mut KvCache, attention: Attention) -> Result<Tensor> {
    let mut logits = None;
    for piece in prompt.chunks(chunk) {
        logits = Some(model.forward(piece, cache, attention)?);
    }
    match logits {
        Some(l) => Ok(l),
        None => bail!("the prompt is empty"),
    }
}

fn long_prompt_source(args: &Args) -> String {
    match (args.synthetic, args.prompt_len) {
        (Some(_), _) => format!(", random ids, seed {}", args.seed),
        (None, Some(_)) => format!(" of {}", text::SOURCE),
        (None, None) => String::new(),
    }
}

fn device_name(device: &Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

fn print_stats(r: &RunResult, args: &Args, device: &Device) {
    println!(
        "backend {} | device {} | dtype {:?}{}",
        r.attention.name(),
        device_name(device),
        args.dtype,
        if r.repeats > 1 { format!(" | median of {} runs", r.repeats) } else { String::new() }
    );
    println!("prompt: {} tokens, prefill {:.3} s, {:.1} tok/s", r.prompt_tokens, r.prefill_secs, r.prefill_tok_s());
    match r.decode_tok_s() {
        Some(tps) => println!(
            "generated: {} tokens; decode {} tokens in {:.3} s, {:.2} tok/s (excluding the first token)",
            r.generated.len(),
            r.decode_tokens(),
            r.decode_secs,
            tps
        ),
        None => println!("generated: {} tokens; no decode steps to time", r.generated.len()),
    }
}

fn print_comparison(results: &[(Attention, Result<RunResult>)], args: &Args, device: &Device) {
    println!(
        "\n=== compare: device {}, dtype {:?}, {} prompt tokens, median of {} runs ===",
        device_name(device),
        args.dtype,
        results.iter().find_map(|(_, r)| r.as_ref().ok().map(|r| r.prompt_tokens)).unwrap_or(0),
        args.repeats
    );
    println!("| backend | prefill s | prefill tok/s | generated | decode s | decode tok/s |");
    println!("|---|---|---|---|---|---|");
    for (attention, r) in results {
        match r {
            Ok(r) => println!(
                "| {} | {:.3} | {:.1} | {} | {:.3} | {} |",
                attention.name(),
                r.prefill_secs,
                r.prefill_tok_s(),
                r.generated.len(),
                r.decode_secs,
                r.decode_tok_s().map_or("n/a".to_string(), |t| format!("{t:.2}"))
            ),
            Err(e) => println!("| {} | failed: {} | | | | |", attention.name(), first_line(e)),
        }
    }
    let [(_, Ok(fused)), (_, Ok(naive))] = results else {
        return;
    };
    print!("fused / naive: prefill {:.2}×", fused.prefill_tok_s() / naive.prefill_tok_s());
    match (fused.decode_tok_s(), naive.decode_tok_s()) {
        (Some(f), Some(n)) => println!(", decode {:.2}×", f / n),
        _ => println!(),
    }
    let kind = if args.temperature <= 0.0 { "greedy" } else { "sampled (same seed)" };
    match fused.generated.iter().zip(&naive.generated).position(|(a, b)| a != b) {
        None if fused.generated.len() == naive.generated.len() => {
            println!("{kind} token sequences match: yes ({} tokens)", fused.generated.len())
        }
        None => println!(
            "{kind} token sequences match: no (one stops early: fused {} tokens, naive {})",
            fused.generated.len(),
            naive.generated.len()
        ),
        Some(i) => println!(
            "{kind} token sequences match: no (first difference at generated token {i}: fused {}, naive {})",
            fused.generated[i], naive.generated[i]
        ),
    }
}

fn first_line(e: &candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
