//! candle-transformers 0.11.1's `models::llama`, unmodified, on the real SmolLM2-135M-Instruct
//! weights, with `use_flash_attn: true` (candle_flash_attn::flash_attn, which the [patch]
//! makes ours) against `use_flash_attn: false` (its matmul-mask-softmax branch).
//!
//! The weights are the llama example's GGUF (scripts/fetch-model.sh, cached), dequantized and
//! renamed to the Hugging Face checkpoint's tensor names, then loaded through `VarBuilder`
//! as a safetensors checkpoint would be. GGUF stores `attn_q`/`attn_k` with each head's rows
//! permuted for llama.cpp's interleaved RoPE; they are permuted back, because this model
//! applies the half-split RoPE of the HF checkpoint.
//!
//! The oracle: this model cannot run in f64 (candle-nn's fused `rms_norm`, which llama.rs
//! calls, has no f64 CPU kernel), so the reference is the same model with
//! `use_flash_attn: false` in f32 on the CPU, and the yardstick of the dtype's rounding is the
//! larger of the naive run's distance from it and that of the reference model with every
//! weight moved one ulp to a neighbouring f32 (common/mod.rs explains why that measures one
//! f32 rounding). Flash must stay within 2 x yardstick + 4 units of the dtype's (at least
//! f32's) rounding at the logits' scale. The reference reproduces the independent f64 NumPy
//! pass: top token " Paris" with logit 17.37 (+-0.01).
//!
//! Greedy generation: every step feeds both models the naive run's choice and asserts that
//! flash chooses the same token (so free-running greedy generation of the two is identical);
//! a different choice is accepted only as a tie within the step's tolerance, and in f32 not
//! at all: the tokens must match for every step.

mod common;

// The llama example's tokenizer and text (tokenizer.rs reads metadata through `model`).
#[path = "../../../examples/llama/text.rs"]
#[allow(dead_code)]
mod text;
#[path = "../../../examples/llama/tokenizer.rs"]
#[allow(dead_code)]
mod tokenizer;
mod model {
    use candle_core::quantized::gguf_file;
    use candle_core::{bail, Result};
    pub fn metadata<'a>(content: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value> {
        match content.metadata.get(key) {
            Some(v) => Ok(v),
            None => bail!("the GGUF has no metadata key {key:?}"),
        }
    }
}

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use candle_core::quantized::gguf_file;
use candle_core::{bail, DType, Device, IndexOp, Result, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::llama::{Cache, Config, Llama, LlamaConfig};
use common::StepError;

/// "The capital of France is" in SmolLM2's tokenizer; its next token is " Paris" (7042), and
/// an independent f64 NumPy pass continues " Paris.\n\nThe answer" (tests/llama.rs).
const REFERENCE_IDS: [u32; 5] = [504, 3575, 282, 4649, 314];
const PARIS_ID: u32 = 7042;

/// `LLAMA_MODEL` (the device run brings the GGUF there, as for the llama stage), else the
/// cached download of scripts/fetch-model.sh.
fn model_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("LLAMA_MODEL") {
        return Ok(PathBuf::from(path));
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| candle_core::Error::Msg(format!("cannot run {}: {e}", script.display())))?;
    if !out.status.success() {
        bail!("{} failed ({})", script.display(), out.status)
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

struct Gguf {
    content: gguf_file::Content,
    file: std::fs::File,
}

impl Gguf {
    fn open() -> Result<Self> {
        let path = model_path()?;
        let mut file = std::fs::File::open(&path)?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| e.with_path(&path))?;
        Ok(Self { content, file })
    }

    fn u32(&self, key: &str) -> Result<usize> {
        Ok(model::metadata(&self.content, key)?.to_u32()? as usize)
    }

    /// The model's `config.json`, from the GGUF's `llama.*` metadata.
    fn config(&self, use_flash_attn: bool) -> Result<Config> {
        let c = &self.content;
        let num_attention_heads = self.u32("llama.attention.head_count")?;
        let cfg = LlamaConfig {
            hidden_size: self.u32("llama.embedding_length")?,
            intermediate_size: self.u32("llama.feed_forward_length")?,
            vocab_size: model::metadata(c, "tokenizer.ggml.tokens")?.to_vec()?.len(),
            num_hidden_layers: self.u32("llama.block_count")?,
            num_attention_heads,
            num_key_value_heads: Some(self.u32("llama.attention.head_count_kv")?),
            rms_norm_eps: model::metadata(c, "llama.attention.layer_norm_rms_epsilon")?.to_f32()? as f64,
            rope_theta: model::metadata(c, "llama.rope.freq_base")?.to_f32()?,
            bos_token_id: None,
            eos_token_id: None,
            rope_scaling: None,
            max_position_embeddings: self.u32("llama.context_length")?,
            tie_word_embeddings: Some(!c.tensor_infos.contains_key("output.weight")),
        };
        Ok(cfg.into_config(use_flash_attn))
    }

    /// Every weight, dequantized to `dtype` on `device`, under its HF checkpoint name.
    fn hf_weights(&mut self, cfg: &Config, dtype: DType, device: &Device) -> Result<HashMap<String, Tensor>> {
        let head_dim = cfg.hidden_size / cfg.num_attention_heads;
        let names: Vec<String> = self.content.tensor_infos.keys().cloned().collect();
        let mut out = HashMap::new();
        for name in names {
            let t = self.content.tensor(&mut self.file, &name, &Device::Cpu)?.dequantize(&Device::Cpu)?;
            let t = t.to_dtype(DType::F32)?;
            let (hf, t) = match name.split('.').collect::<Vec<_>>().as_slice() {
                ["token_embd", "weight"] => ("model.embed_tokens.weight".to_string(), t),
                ["output_norm", "weight"] => ("model.norm.weight".to_string(), t),
                ["output", "weight"] => ("lm_head.weight".to_string(), t),
                ["blk", i, part, "weight"] => {
                    let p = format!("model.layers.{i}");
                    match *part {
                        "attn_q" => {
                            (format!("{p}.self_attn.q_proj.weight"), unpermute(&t, cfg.num_attention_heads, head_dim)?)
                        }
                        "attn_k" => {
                            (format!("{p}.self_attn.k_proj.weight"), unpermute(&t, cfg.num_key_value_heads, head_dim)?)
                        }
                        "attn_v" => (format!("{p}.self_attn.v_proj.weight"), t),
                        "attn_output" => (format!("{p}.self_attn.o_proj.weight"), t),
                        "ffn_gate" => (format!("{p}.mlp.gate_proj.weight"), t),
                        "ffn_up" => (format!("{p}.mlp.up_proj.weight"), t),
                        "ffn_down" => (format!("{p}.mlp.down_proj.weight"), t),
                        "attn_norm" => (format!("{p}.input_layernorm.weight"), t),
                        "ffn_norm" => (format!("{p}.post_attention_layernorm.weight"), t),
                        _ => bail!("unexpected GGUF tensor {name}"),
                    }
                }
                _ => bail!("unexpected GGUF tensor {name}"),
            };
            out.insert(hf, t.to_dtype(dtype)?.to_device(device)?);
        }
        Ok(out)
    }
}

/// llama.cpp's converter stores each head's rows as `(head_dim/2, 2)` pairs (interleaved
/// RoPE); the HF layout is `(2, head_dim/2)` (half split). Rows are `(heads, head_dim)`.
fn unpermute(w: &Tensor, heads: usize, head_dim: usize) -> Result<Tensor> {
    let (rows, cols) = w.dims2()?;
    if rows != heads * head_dim {
        bail!("{rows} rows are not {heads} heads of {head_dim}")
    }
    w.reshape((heads, head_dim / 2, 2, cols))?.transpose(1, 2)?.contiguous()?.reshape((rows, cols))
}

/// One model: candle-transformers' Llama and its cache.
struct Run {
    model: Llama,
    cache: Cache,
    device: Device,
}

impl Run {
    fn new(weights: &HashMap<String, Tensor>, cfg: &Config, dtype: DType, device: &Device) -> Result<Self> {
        let vb = VarBuilder::from_tensors(weights.clone(), dtype, device);
        Ok(Self { model: Llama::load(vb, cfg)?, cache: Cache::new(true, dtype, cfg, device)?, device: device.clone() })
    }

    /// Logits after `tokens` at position `pos` (f32, CPU).
    fn step(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let x = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        self.model.forward(&x, pos, &mut self.cache)?.i(0)?.to_device(&Device::Cpu)
    }
}

struct Setup {
    cfg_flash: Config,
    cfg_naive: Config,
    dtype: DType,
    device: Device,
    weights: HashMap<String, Tensor>,
    reference_weights: HashMap<String, Tensor>,
    neighbour_weights: HashMap<String, Tensor>,
    tokenizer: tokenizer::GgufTokenizer,
}

impl Setup {
    fn load() -> Result<Self> {
        let device = common::device()?;
        let dtype = common::dtype(&device)?;
        let mut gguf = Gguf::open()?;
        let cfg_flash = gguf.config(true)?;
        let cfg_naive = gguf.config(false)?;
        let reference_weights = gguf.hf_weights(&cfg_naive, DType::F32, &Device::Cpu)?;
        let neighbour_weights = common::neighbour_weights(&reference_weights, 16)?;
        let weights = reference_weights
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.to_dtype(dtype)?.to_device(&device)?)))
            .collect::<Result<_>>()?;
        let tokenizer = tokenizer::GgufTokenizer::from_gguf(&gguf.content)?;
        Ok(Self { cfg_flash, cfg_naive, dtype, device, weights, reference_weights, neighbour_weights, tokenizer })
    }

    fn flash(&self) -> Result<Run> {
        Run::new(&self.weights, &self.cfg_flash, self.dtype, &self.device)
    }
    fn naive(&self) -> Result<Run> {
        Run::new(&self.weights, &self.cfg_naive, self.dtype, &self.device)
    }
    /// The f32 reference (naive, CPU).
    fn reference(&self) -> Result<Run> {
        Run::new(&self.reference_weights, &self.cfg_naive, DType::F32, &Device::Cpu)
    }
    /// The yardstick run: the reference with neighbouring f32 weights.
    fn neighbour(&self) -> Result<Run> {
        Run::new(&self.neighbour_weights, &self.cfg_naive, DType::F32, &Device::Cpu)
    }
}

fn argmax(logits: &Tensor) -> Result<u32> {
    logits.to_dtype(DType::F32)?.argmax(0)?.to_scalar::<u32>()
}

/// Where flash and naive pick different tokens, the two candidates' logits in the naive
/// run must be within the step's tolerance of each other (a tie at this dtype); otherwise
/// the paths disagree. Returns whether they tied (generation is then compared no further).
fn same_choice(step: usize, flash: &Tensor, naive: &Tensor, e: &StepError) -> Result<bool> {
    let (f, n) = (argmax(flash)?, argmax(naive)?);
    if f == n {
        return Ok(false);
    }
    let naive = naive.to_dtype(DType::F32)?;
    let margin = naive.get(n as usize)?.to_scalar::<f32>()? - naive.get(f as usize)?.to_scalar::<f32>()?;
    assert!(
        margin <= e.bound,
        "step {step}: flash picks {f}, naive {n}; naive's margin {margin} exceeds the tolerance {} ({e:?})",
        e.bound
    );
    eprintln!("step {step}: flash {f} / naive {n} tie within {margin} <= {}; generation compared up to here", e.bound);
    Ok(true)
}

#[test]
fn smollm2_next_token_after_the_capital_of_france_is_paris() -> Result<()> {
    let s = Setup::load()?;
    let (mut flash, mut naive) = (s.flash()?, s.naive()?);
    let (mut reference, mut neighbour) = (s.reference()?, s.neighbour()?);
    let (f, n) = (flash.step(&REFERENCE_IDS, 0)?, naive.step(&REFERENCE_IDS, 0)?);
    let (o, nb) = (reference.step(&REFERENCE_IDS, 0)?, neighbour.step(&REFERENCE_IDS, 0)?);
    let e = StepError::against_f32(&f, &n, &nb, &o, s.dtype)?;
    eprintln!("prompt of 5: {e:?}");
    assert!(e.ok(), "flash logits too far from the f32 reference: {e:?}");
    assert_eq!(argmax(&o)?, PARIS_ID, "the converted weights do not reproduce the reference");
    assert_eq!(argmax(&f)?, PARIS_ID);
    assert_eq!(argmax(&n)?, PARIS_ID);
    // The independent f64 NumPy pass's logit of " Paris" (tests/llama.rs): the conversion is right.
    let logit = o.get(PARIS_ID as usize)?.to_scalar::<f32>()?;
    assert!((logit - 17.37).abs() < 0.01, "reference logit of \" Paris\" {logit}, reference 17.37");

    // Greedy continuation, teacher-forced from the naive run so all three see the same tokens.
    let mut tokens = vec![argmax(&n)?];
    let (mut fl, mut nl) = (f, n);
    for step in 0..5 {
        let pos = REFERENCE_IDS.len() + step;
        let tok = *tokens.last().unwrap();
        fl = flash.step(&[tok], pos)?;
        nl = naive.step(&[tok], pos)?;
        let (ol, nbl) = (reference.step(&[tok], pos)?, neighbour.step(&[tok], pos)?);
        let e = StepError::against_f32(&fl, &nl, &nbl, &ol, s.dtype)?;
        eprintln!("decode step {step}: {e:?}");
        assert!(e.ok(), "decode step {step}: {e:?}");
        if same_choice(step, &fl, &nl, &e)? {
            break;
        }
        tokens.push(argmax(&nl)?);
    }
    let _ = (fl, nl);
    let text = s.tokenizer.decode(&tokens)?;
    eprintln!("greedy: {text:?}");
    if s.dtype == DType::F32 {
        assert_eq!(text, " Paris.\n\nThe answer", "f32 greedy generation must match at every step");
    }
    Ok(())
}

/// A 300-token prompt (more than one 256-key tile of the CPU kernel), prefilled whole and in
/// two chunks (the second chunk's causal mask is bottom-right aligned against the cache),
/// then 32 greedy tokens; every step's logits against the f32 reference (module docs).
#[test]
fn smollm2_long_prompt_chunked_prefill_and_greedy_generation() -> Result<()> {
    const PROMPT: usize = 300;
    const SPLIT: usize = 200;
    const STEPS: usize = 32;
    let s = Setup::load()?;
    let prompt = text::long_prompt(PROMPT, |t| s.tokenizer.encode(t))?;
    let (mut reference, mut neighbour) = (s.reference()?, s.neighbour()?);
    let (o, nb) = (reference.step(&prompt, 0)?, neighbour.step(&prompt, 0)?);

    // Whole prompt, then chunked.
    let (mut flash, mut naive) = (s.flash()?, s.naive()?);
    let (f, n) = (flash.step(&prompt, 0)?, naive.step(&prompt, 0)?);
    let e = StepError::against_f32(&f, &n, &nb, &o, s.dtype)?;
    eprintln!("prefill of {PROMPT}: {e:?}");
    assert!(e.ok(), "prefill: {e:?}");
    for make in [Setup::flash, Setup::naive] {
        let mut r = make(&s)?;
        r.step(&prompt[..SPLIT], 0)?;
        let chunked = r.step(&prompt[SPLIT..], SPLIT)?;
        let e_chunk = StepError::against_f32(&chunked, &n, &nb, &o, s.dtype)?;
        eprintln!("prefill in chunks of {SPLIT} + {}: {e_chunk:?}", PROMPT - SPLIT);
        assert!(e_chunk.ok(), "chunked prefill: {e_chunk:?}");
    }

    let (mut fl, mut nl) = (f, n);
    let mut generated = Vec::new();
    let (mut current, mut worst) = (e, e);
    for step in 0..STEPS {
        if same_choice(step, &fl, &nl, &current)? {
            break;
        }
        let tok = argmax(&nl)?;
        generated.push(tok);
        let pos = PROMPT + step;
        fl = flash.step(&[tok], pos)?;
        nl = naive.step(&[tok], pos)?;
        let (ol, nbl) = (reference.step(&[tok], pos)?, neighbour.step(&[tok], pos)?);
        current = StepError::against_f32(&fl, &nl, &nbl, &ol, s.dtype)?;
        assert!(current.ok(), "decode step {step}: {current:?}");
        if current.flash > worst.flash {
            worst = current;
        }
    }
    eprintln!(
        "greedy ({} tokens, the same for both): {:?}; worst step {worst:?}",
        generated.len(),
        s.tokenizer.decode(&generated)?
    );
    if s.dtype == DType::F32 {
        assert_eq!(generated.len(), STEPS, "f32 generation must match for every step");
    }
    Ok(())
}
