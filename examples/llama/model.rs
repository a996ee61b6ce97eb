//! A LLaMA-architecture decoder in plain candle ops: RMSNorm, RoPE, SwiGLU, GQA attention
//! and a KV cache preallocated to the run's length and written in place.
//!
//! Weights come from a GGUF file (dequantized to the run dtype) or are random at the
//! shapes of a real model (`Config::llama3_8b`, `Config::llama2_7b`), for throughput runs.
//!
//! The two attention back ends see the same q, the same cache and the same scale; only the
//! attention itself differs:
//! * [`Attention::Naive`] is candle-transformers' llama: upcast to f32, `repeat_kv`,
//!   `q kᵀ / √d`, causal mask, `softmax_last_dim`, `· v`, back to the run dtype.
//! * [`Attention::Fused`] is `candle_fused_attn::flash_attn` on the un-repeated K/V views of
//!   the cache; its mask is bottom-right aligned, so a prefill and a decode step are the
//!   same call.
//!
//! For training (examples/train.rs) the weights can also be trainable f32 `Var`s
//! ([`TrainableWeights`]) and [`Llama::forward_train`] runs a full sequence, causal, with no
//! KV cache and only differentiable ops.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{bail, DType, Device, Module, Result, Tensor, Var, D};
use candle_nn::{Embedding, Linear};

/// Which attention implementation the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    Fused,
    Naive,
}

impl Attention {
    pub fn name(self) -> &'static str {
        match self {
            Attention::Fused => "fused",
            Attention::Naive => "naive",
        }
    }
}

/// The dimensions and constants of a LLaMA-architecture model.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub rope_theta: f32,
    pub rms_norm_eps: f32,
    /// The context length the model was trained for (longer runs are allowed; RoPE extrapolates).
    pub context_length: usize,
    /// Whether the output projection reuses the token embedding.
    pub tied_embeddings: bool,
}

impl Config {
    /// SmolLM2-135M's shapes (GQA 9:3, tied embeddings): the default model's, for GPU
    /// throughput runs where the 98 MB GGUF cannot travel; tests check it equals the GGUF's.
    pub fn smollm2_135m() -> Self {
        Self {
            vocab_size: 49_152,
            hidden_size: 576,
            intermediate_size: 1536,
            num_layers: 30,
            num_heads: 9,
            num_kv_heads: 3,
            head_dim: 64,
            rope_theta: 100_000.0,
            rms_norm_eps: 1e-5,
            context_length: 8192,
            tied_embeddings: true,
        }
    }

    /// Meta-Llama-3-8B's shapes (GQA 32:8, 128k vocabulary, untied output).
    pub fn llama3_8b() -> Self {
        Self {
            vocab_size: 128_256,
            hidden_size: 4096,
            intermediate_size: 14_336,
            num_layers: 32,
            num_heads: 32,
            num_kv_heads: 8,
            head_dim: 128,
            rope_theta: 500_000.0,
            rms_norm_eps: 1e-5,
            context_length: 8192,
            tied_embeddings: false,
        }
    }

    /// Llama-2-7B's shapes (multi-head attention, 32k vocabulary, untied output).
    pub fn llama2_7b() -> Self {
        Self {
            vocab_size: 32_000,
            hidden_size: 4096,
            intermediate_size: 11_008,
            num_layers: 32,
            num_heads: 32,
            num_kv_heads: 32,
            head_dim: 128,
            rope_theta: 10_000.0,
            rms_norm_eps: 1e-5,
            context_length: 4096,
            tied_embeddings: false,
        }
    }

    /// Reads the `llama.*` metadata of a GGUF file.
    pub fn from_gguf(content: &gguf_file::Content) -> Result<Self> {
        let arch = metadata(content, "general.architecture")?.to_string()?.clone();
        if arch != "llama" {
            bail!("the GGUF's general.architecture is {arch:?}; this example runs \"llama\" models only")
        }
        let usize_of = |key: &str| -> Result<usize> { Ok(metadata(content, key)?.to_u32()? as usize) };
        let hidden_size = usize_of("llama.embedding_length")?;
        let num_heads = usize_of("llama.attention.head_count")?;
        let num_kv_heads = match content.metadata.get("llama.attention.head_count_kv") {
            Some(v) => v.to_u32()? as usize,
            None => num_heads,
        };
        let head_dim = match content.metadata.get("llama.rope.dimension_count") {
            Some(v) => v.to_u32()? as usize,
            None => hidden_size / num_heads,
        };
        if head_dim * num_heads != hidden_size {
            bail!("unsupported GGUF: rope dimension {head_dim} × {num_heads} heads != embedding {hidden_size} (partial rotary is not implemented)")
        }
        let rope_theta = match content.metadata.get("llama.rope.freq_base") {
            Some(v) => v.to_f32()?,
            None => 10_000.0,
        };
        let vocab_size = match content.metadata.get("llama.vocab_size") {
            Some(v) => v.to_u32()? as usize,
            None => metadata(content, "tokenizer.ggml.tokens")?.to_vec()?.len(),
        };
        Ok(Self {
            vocab_size,
            hidden_size,
            intermediate_size: usize_of("llama.feed_forward_length")?,
            num_layers: usize_of("llama.block_count")?,
            num_heads,
            num_kv_heads,
            head_dim,
            rope_theta,
            rms_norm_eps: metadata(content, "llama.attention.layer_norm_rms_epsilon")?.to_f32()?,
            context_length: usize_of("llama.context_length")?,
            tied_embeddings: !content.tensor_infos.contains_key("output.weight"),
        })
    }

    /// Parameters, for the memory estimate printed before a synthetic model is built.
    pub fn num_parameters(&self) -> usize {
        let (h, kv) = (self.hidden_size, self.num_kv_heads * self.head_dim);
        let per_layer = 2 * h * h + 2 * h * kv + 3 * h * self.intermediate_size + 2 * h;
        let output = if self.tied_embeddings { 0 } else { self.vocab_size * h };
        self.vocab_size * h + self.num_layers * per_layer + h + output
    }
}

/// Opens a GGUF file and reads its header (metadata and tensor directory).
pub fn open_gguf(path: &Path) -> Result<(gguf_file::Content, std::fs::File)> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| candle_core::Error::Msg(format!("cannot open model {}: {e}", path.display())))?;
    let content = gguf_file::Content::read(&mut file).map_err(|e| e.with_path(path))?;
    Ok((content, file))
}

pub fn metadata<'a>(content: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value> {
    match content.metadata.get(key) {
        Some(v) => Ok(v),
        None => bail!("the GGUF has no metadata key {key:?}"),
    }
}

struct Block {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    ffn_norm: Tensor,
    w_gate: Linear,
    w_up: Linear,
    w_down: Linear,
}

/// Per-layer K and V buffers of shape `(1, kv_heads, capacity, head_dim)` (the layout
/// candle-transformers' llama keeps), allocated once and written in place with `slice_set`.
pub struct KvCache {
    k: Vec<Tensor>,
    v: Vec<Tensor>,
    len: usize,
    capacity: usize,
}

impl KvCache {
    pub fn new(cfg: &Config, capacity: usize, dtype: DType, device: &Device) -> Result<Self> {
        let shape = (1, cfg.num_kv_heads, capacity, cfg.head_dim);
        let zeros = || Tensor::zeros(shape, dtype, device);
        Ok(Self {
            k: (0..cfg.num_layers).map(|_| zeros()).collect::<Result<_>>()?,
            v: (0..cfg.num_layers).map(|_| zeros()).collect::<Result<_>>()?,
            len: 0,
            capacity,
        })
    }
}

pub struct Llama {
    cfg: Config,
    embed: Embedding,
    blocks: Vec<Block>,
    output_norm: Tensor,
    lm_head: Linear,
    /// RoPE tables `(max_positions, head_dim / 2)` in the run dtype.
    cos: Tensor,
    sin: Tensor,
    device: Device,
}

impl Llama {
    /// Builds the model from an opened GGUF (see [`open_gguf`]), dequantizing every weight
    /// to `dtype` on `device`. `max_positions` sizes the RoPE tables: the longest run
    /// (prompt + generated) to expect.
    pub fn from_gguf(
        content: &gguf_file::Content,
        file: &mut std::fs::File,
        device: &Device,
        dtype: DType,
        max_positions: usize,
    ) -> Result<Self> {
        let cfg = Config::from_gguf(content)?;
        // Dequantize on the CPU (every quantization type candle knows is supported there),
        // then convert and move: this runs once, and the run itself uses dense weights.
        let weight = |name: &str| -> Result<Tensor> {
            content.tensor(file, name, &Device::Cpu)?.dequantize(&Device::Cpu)?.to_dtype(dtype)?.to_device(device)
        };
        Self::from_named_weights(cfg, weight, device, dtype, max_positions)
    }

    /// Builds the model from its GGUF-named weights (see [`weight_names`]), each fetched once
    /// by `weight`, already in `dtype` on `device`.
    fn from_named_weights(
        cfg: Config,
        mut weight: impl FnMut(&str) -> Result<Tensor>,
        device: &Device,
        dtype: DType,
        max_positions: usize,
    ) -> Result<Self> {
        let embed_weight = weight("token_embd.weight")?;
        let mut blocks = Vec::with_capacity(cfg.num_layers);
        for i in 0..cfg.num_layers {
            let mut w = |suffix: &str| weight(&format!("blk.{i}.{suffix}.weight"));
            blocks.push(Block {
                attn_norm: w("attn_norm")?,
                wq: Linear::new(w("attn_q")?, None),
                wk: Linear::new(w("attn_k")?, None),
                wv: Linear::new(w("attn_v")?, None),
                wo: Linear::new(w("attn_output")?, None),
                ffn_norm: w("ffn_norm")?,
                w_gate: Linear::new(w("ffn_gate")?, None),
                w_up: Linear::new(w("ffn_up")?, None),
                w_down: Linear::new(w("ffn_down")?, None),
            });
        }
        let output_norm = weight("output_norm.weight")?;
        let lm_head = if cfg.tied_embeddings { embed_weight.clone() } else { weight("output.weight")? };
        Self::assemble(cfg, embed_weight, blocks, output_norm, lm_head, device, dtype, max_positions)
    }

    /// Random weights at `cfg`'s shapes: uniform with variance `1 / fan_in`, so activations
    /// stay O(1) through every layer; norms are ones. For throughput only (no text). A seed
    /// gives the same weights on the same kind of device (the CPU and CUDA generators differ).
    pub fn synthetic(cfg: Config, seed: u64, device: &Device, dtype: DType, max_positions: usize) -> Result<Self> {
        let mut uniform = synthetic_init(seed, device)?;
        let mut random = |rows: usize, cols: usize| -> Result<Tensor> { uniform(rows, cols)?.to_dtype(dtype) };
        let ones = |n: usize| Tensor::ones(n, dtype, device);
        let (h, kv) = (cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim);
        let embed_weight = random(cfg.vocab_size, h)?;
        let mut blocks = Vec::with_capacity(cfg.num_layers);
        for _ in 0..cfg.num_layers {
            blocks.push(Block {
                attn_norm: ones(h)?,
                wq: Linear::new(random(h, h)?, None),
                wk: Linear::new(random(kv, h)?, None),
                wv: Linear::new(random(kv, h)?, None),
                wo: Linear::new(random(h, h)?, None),
                ffn_norm: ones(h)?,
                w_gate: Linear::new(random(cfg.intermediate_size, h)?, None),
                w_up: Linear::new(random(cfg.intermediate_size, h)?, None),
                w_down: Linear::new(random(h, cfg.intermediate_size)?, None),
            });
        }
        let lm_head = if cfg.tied_embeddings { embed_weight.clone() } else { random(cfg.vocab_size, h)? };
        let output_norm = ones(h)?;
        Self::assemble(cfg, embed_weight, blocks, output_norm, lm_head, device, dtype, max_positions)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        cfg: Config,
        embed_weight: Tensor,
        blocks: Vec<Block>,
        output_norm: Tensor,
        lm_head: Tensor,
        device: &Device,
        dtype: DType,
        max_positions: usize,
    ) -> Result<Self> {
        let (cos, sin) = rope_tables(&cfg, max_positions, device, dtype)?;
        Ok(Self {
            embed: Embedding::new(embed_weight, cfg.hidden_size),
            blocks,
            output_norm,
            lm_head: Linear::new(lm_head, None),
            cos,
            sin,
            device: device.clone(),
            cfg,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The dtype of weights, activations and the KV cache.
    pub fn dtype(&self) -> DType {
        self.output_norm.dtype()
    }

    /// The longest run the RoPE tables cover.
    pub fn max_positions(&self) -> usize {
        self.cos.dim(0).unwrap_or(0)
    }

    /// Runs `tokens` at positions `cache.len()..`, appends their K/V to the cache, and
    /// returns the f32 logits `(vocab)` of the last token.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache, attention: Attention) -> Result<Tensor> {
        let (pos, seq_len) = (cache.len, tokens.len());
        if seq_len == 0 {
            bail!("forward needs at least one token")
        }
        let end = pos + seq_len;
        if end > cache.capacity || end > self.max_positions() {
            bail!(
                "the run needs {end} positions but the KV cache holds {} and the RoPE tables cover {}",
                cache.capacity,
                self.max_positions()
            )
        }
        let cos = self.cos.narrow(0, pos, seq_len)?;
        let sin = self.sin.narrow(0, pos, seq_len)?;
        // candle-transformers builds its causal mask once per forward and shares it.
        let mask = match attention {
            Attention::Naive if seq_len > 1 => Some(causal_mask(seq_len, end, &self.device)?),
            _ => None,
        };
        let mut x = self.embed.forward(&Tensor::new(tokens, &self.device)?.unsqueeze(0)?)?;
        for (i, block) in self.blocks.iter().enumerate() {
            let (k_cache, v_cache) = (&cache.k[i], &cache.v[i]);
            x = self.block_forward(block, &x, &cos, &sin, (k_cache, v_cache), pos, attention, mask.as_ref())?;
        }
        cache.len = end;
        let last = x.narrow(1, seq_len - 1, 1)?;
        let last = rms_norm(&last, &self.output_norm, self.cfg.rms_norm_eps)?;
        self.lm_head.forward(&last)?.flatten_all()?.to_dtype(DType::F32)
    }

    #[allow(clippy::too_many_arguments)]
    fn block_forward(
        &self,
        b: &Block,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        (k_cache, v_cache): (&Tensor, &Tensor),
        pos: usize,
        attention: Attention,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let cfg = &self.cfg;
        let (batch, seq_len, hidden) = x.dims3()?;
        let (h, hkv, d) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);

        let xn = rms_norm(x, &b.attn_norm, cfg.rms_norm_eps)?;
        let heads = |t: Tensor, n: usize| t.reshape((batch, seq_len, n, d))?.transpose(1, 2)?.contiguous();
        let q = heads(b.wq.forward(&xn)?, h)?;
        let k = heads(b.wk.forward(&xn)?, hkv)?;
        let v = heads(b.wv.forward(&xn)?, hkv)?;
        // GGUF stores q/k rows permuted for llama.cpp's rotation of interleaved pairs
        // (dims 0/1, 2/3, …), so the interleaved variant is the one that matches the weights.
        let q = candle_nn::rotary_emb::rope_i(&q, cos, sin)?;
        let k = candle_nn::rotary_emb::rope_i(&k, cos, sin)?;

        k_cache.slice_set(&k, 2, pos)?;
        v_cache.slice_set(&v, 2, pos)?;
        let k_all = k_cache.narrow(2, 0, pos + seq_len)?; // (1, hkv, L, d), a view
        let v_all = v_cache.narrow(2, 0, pos + seq_len)?;

        let scale = 1.0 / (d as f64).sqrt();
        let y = match attention {
            Attention::Fused => {
                // (b, s, heads, d) views: the op reads them through their strides, K/V un-repeated.
                let out = candle_fused_attn::flash_attn(
                    &q.transpose(1, 2)?,
                    &k_all.transpose(1, 2)?,
                    &v_all.transpose(1, 2)?,
                    scale as f32,
                    true,
                )?;
                out.reshape((batch, seq_len, hidden))?
            }
            Attention::Naive => naive_attention(&q, &k_all, &v_all, h / hkv, scale, mask)?
                .transpose(1, 2)?
                .reshape((batch, seq_len, hidden))?,
        };
        let x = (x + b.wo.forward(&y)?)?;

        let xn = rms_norm(&x, &b.ffn_norm, cfg.rms_norm_eps)?;
        let gate = candle_nn::ops::silu(&b.w_gate.forward(&xn)?)?;
        let mlp = b.w_down.forward(&(gate * b.w_up.forward(&xn)?)?)?;
        x + mlp
    }
}

/// Every weight of a GGUF model as a trainable f32 [`Var`] (dequantized), with its GGUF
/// name, in [`weight_names`] order. With tied embeddings the output projection is the
/// embedding's `Var`, so both of its uses add into one gradient.
#[allow(dead_code)] // the training API: examples/train.rs uses it, examples/llama.rs does not
pub struct TrainableWeights {
    cfg: Config,
    vars: Vec<(String, Var)>,
    device: Device,
}

#[allow(dead_code)]
impl TrainableWeights {
    /// Dequantizes every weight of an opened GGUF (see [`open_gguf`]) to an f32 `Var` on `device`.
    pub fn from_gguf(content: &gguf_file::Content, file: &mut std::fs::File, device: &Device) -> Result<Self> {
        let cfg = Config::from_gguf(content)?;
        let vars = weight_names(&cfg)
            .into_iter()
            .map(|name| {
                let t = content.tensor(file, &name, &Device::Cpu)?.dequantize(&Device::Cpu)?.to_dtype(DType::F32)?;
                let var = Var::from_tensor(&t.to_device(device)?)?;
                Ok((name, var))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { cfg, vars, device: device.clone() })
    }

    /// Random f32 weights at `cfg`'s shapes, initialised as [`Llama::synthetic`] does
    /// (uniform with variance `1 / fan_in`, norms ones; the same values for the same seed on
    /// the CPU): for throughput and memory runs where no GGUF can travel.
    pub fn synthetic(cfg: Config, seed: u64, device: &Device) -> Result<Self> {
        let mut uniform = synthetic_init(seed, device)?;
        let (h, kv, ffn) = (cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, cfg.intermediate_size);
        let vars = weight_names(&cfg)
            .into_iter()
            .map(|name| {
                let base = name.strip_suffix(".weight").unwrap_or(&name);
                let kind = base.rsplit('.').next().unwrap_or(base);
                let t = match kind {
                    "token_embd" | "output" => uniform(cfg.vocab_size, h)?,
                    "attn_q" | "attn_output" => uniform(h, h)?,
                    "attn_k" | "attn_v" => uniform(kv, h)?,
                    "ffn_gate" | "ffn_up" => uniform(ffn, h)?,
                    "ffn_down" => uniform(h, ffn)?,
                    "attn_norm" | "ffn_norm" | "output_norm" => Tensor::ones(h, DType::F32, device)?,
                    _ => bail!("no synthetic shape for the weight {name:?}"),
                };
                Ok((name, Var::from_tensor(&t)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { cfg, vars, device: device.clone() })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The `Var`s with their GGUF names, each once.
    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    pub fn num_parameters(&self) -> usize {
        self.vars.iter().map(|(_, v)| v.elem_count()).sum()
    }
}

/// The GGUF names of a LLaMA model's weights, in the order the model uses them.
#[allow(dead_code)]
pub fn weight_names(cfg: &Config) -> Vec<String> {
    let mut names = vec!["token_embd.weight".to_string()];
    for i in 0..cfg.num_layers {
        for suffix in
            ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]
        {
            names.push(format!("blk.{i}.{suffix}.weight"));
        }
    }
    names.push("output_norm.weight".to_string());
    if !cfg.tied_embeddings {
        names.push("output.weight".to_string());
    }
    names
}

#[allow(dead_code)]
impl Llama {
    /// A model that computes in `dtype` from `weights`' current values. Each weight is
    /// `var.to_dtype(dtype)`: the `Var` itself for f32, a tracked cast otherwise, so
    /// gradients reach the f32 `Var`s either way. A cast is a snapshot: after the optimizer
    /// updates the `Var`s, build the model again (cheap next to a training step).
    pub fn from_trainable(weights: &TrainableWeights, dtype: DType, max_positions: usize) -> Result<Self> {
        let by_name: HashMap<&str, &Var> = weights.vars.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let weight = |name: &str| -> Result<Tensor> {
            match by_name.get(name) {
                Some(var) => var.as_tensor().to_dtype(dtype),
                None => bail!("the trainable weights have no tensor named {name:?}"),
            }
        };
        Self::from_named_weights(weights.cfg.clone(), weight, &weights.device, dtype, max_positions)
    }

    /// The full-sequence causal forward pass for training: `tokens` `(batch, seq)` u32 at
    /// positions `0..seq`, no KV cache. Returns the logits `(batch, seq, vocab)` in the
    /// model dtype.
    ///
    /// Every op here is differentiable. candle-nn's fused `rms_norm` and `rope_i` kernels
    /// have no backward (applied with `apply_op*_no_bwd`: their inputs would silently get no
    /// gradient), so this path runs their plain-op versions, `rms_norm_slow` and `rope_i_slow`,
    /// which compute the same functions.
    ///
    /// `attend(q, k, v, scale)` is the causal attention: q `(b, seq, heads, d)`, k and v
    /// `(b, seq, kv_heads, d)` un-repeated (GQA); it returns `(b, seq, heads, d)`.
    pub fn forward_train(
        &self,
        tokens: &Tensor,
        attend: impl Fn(&Tensor, &Tensor, &Tensor, f32) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let (batch, seq_len) = tokens.dims2()?;
        if seq_len == 0 || seq_len > self.max_positions() {
            bail!("forward_train needs 1..={} tokens per sequence, got {seq_len}", self.max_positions())
        }
        // Activations are (batch · seq, hidden) matrices, so every projection is one plain
        // matmul (and its backward two), with no broadcast of the weight over the batch.
        let mut x = self.embed.forward(&tokens.flatten_all()?)?;
        for block in &self.blocks {
            x = self.block_forward_train(block, &x, (batch, seq_len), &attend)?;
        }
        let x = candle_nn::ops::rms_norm_slow(&x, &self.output_norm, self.cfg.rms_norm_eps)?;
        self.lm_head.forward(&x)?.reshape((batch, seq_len, self.cfg.vocab_size))
    }

    /// One block on `x` `(batch · seq_len, hidden)`.
    fn block_forward_train(
        &self,
        b: &Block,
        x: &Tensor,
        (batch, seq_len): (usize, usize),
        attend: &impl Fn(&Tensor, &Tensor, &Tensor, f32) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let cfg = &self.cfg;
        let (h, hkv, d) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let eps = cfg.rms_norm_eps;

        let xn = candle_nn::ops::rms_norm_slow(x, &b.attn_norm, eps)?;
        // RoPE (interleaved, as in `block_forward`) on (b, heads, seq, d); the attention gets
        // (b, seq, heads, d) views of the result.
        let rotated = |t: Tensor, n: usize| -> Result<Tensor> {
            let t = t.reshape((batch, seq_len, n, d))?.transpose(1, 2)?.contiguous()?;
            candle_nn::rotary_emb::rope_i_slow(&t, &self.cos, &self.sin)?.transpose(1, 2)
        };
        let q = rotated(b.wq.forward(&xn)?, h)?;
        let k = rotated(b.wk.forward(&xn)?, hkv)?;
        let v = b.wv.forward(&xn)?.reshape((batch, seq_len, hkv, d))?;
        let scale = (1.0 / (d as f64).sqrt()) as f32;
        let y = attend(&q, &k, &v, scale)?.reshape((batch * seq_len, h * d))?;
        let x = (x + b.wo.forward(&y)?)?;

        let xn = candle_nn::ops::rms_norm_slow(&x, &b.ffn_norm, eps)?;
        let gate = candle_nn::ops::silu(&b.w_gate.forward(&xn)?)?;
        let mlp = b.w_down.forward(&(gate * b.w_up.forward(&xn)?)?)?;
        x + mlp
    }
}

/// candle-nn's fused `rms_norm` accumulates in f32; f64 runs (the tests' oracle) take the
/// plain-ops version, which stays in f64.
fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32) -> Result<Tensor> {
    if x.dtype() == DType::F64 {
        candle_nn::ops::rms_norm_slow(x, weight, eps)
    } else {
        candle_nn::ops::rms_norm(x, weight, eps)
    }
}

/// candle-transformers' llama attention (`models/llama.rs`, non-flash branch): q `(b, h, s, d)`,
/// k/v `(b, hkv, L, d)`; returns `(b, h, s, d)` in q's dtype.
fn naive_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    n_rep: usize,
    scale: f64,
    mask: Option<&Tensor>,
) -> Result<Tensor> {
    let in_dtype = q.dtype();
    // f32 as candle-transformers; f64 (the tests' oracle) is kept.
    let att_dtype = if in_dtype == DType::F64 { DType::F64 } else { DType::F32 };
    let q = q.to_dtype(att_dtype)?;
    let k = repeat_kv(k.to_dtype(att_dtype)?, n_rep)?;
    let v = repeat_kv(v.to_dtype(att_dtype)?, n_rep)?;
    let att = (q.matmul(&k.t()?)? * scale)?;
    let att = match mask {
        None => att,
        Some(mask) => {
            let mask = mask.broadcast_as(att.shape())?;
            let neg_inf =
                Tensor::new(f32::NEG_INFINITY, att.device())?.to_dtype(att_dtype)?.broadcast_as(att.shape())?;
            mask.where_cond(&neg_inf, &att)?
        }
    };
    let att = candle_nn::ops::softmax_last_dim(&att)?;
    att.matmul(&v.contiguous()?)?.to_dtype(in_dtype)
}

/// `candle_transformers::utils::repeat_kv`: `(b, hkv, L, d)` → `(b, hkv·n_rep, L, d)`.
fn repeat_kv(x: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        return Ok(x);
    }
    let (b, hkv, len, d) = x.dims4()?;
    Tensor::cat(&vec![&x; n_rep], 2)?.reshape((b, hkv * n_rep, len, d))
}

/// `(seq_len, total)` u8, 1 where key `j` is in the future of query `i` (bottom-right
/// aligned: query `i` sits at position `total - seq_len + i`).
fn causal_mask(seq_len: usize, total: usize, device: &Device) -> Result<Tensor> {
    let offset = total - seq_len;
    let mask: Vec<u8> = (0..seq_len).flat_map(|i| (0..total).map(move |j| u8::from(j > i + offset))).collect();
    Tensor::from_slice(&mask, (seq_len, total), device)
}

/// `cos`/`sin` of `position · θ^(-2i/d)`, computed in f32 and stored in the run dtype.
fn rope_tables(cfg: &Config, max_positions: usize, device: &Device, dtype: DType) -> Result<(Tensor, Tensor)> {
    let half = cfg.head_dim / 2;
    let inv_freq: Vec<f32> =
        (0..half).map(|i| 1.0 / cfg.rope_theta.powf(2.0 * i as f32 / cfg.head_dim as f32)).collect();
    let inv_freq = Tensor::from_vec(inv_freq, (1, half), device)?;
    let positions =
        Tensor::arange(0u32, max_positions as u32, device)?.to_dtype(DType::F32)?.reshape((max_positions, 1))?;
    let angles = positions.broadcast_mul(&inv_freq)?;
    Ok((angles.cos()?.to_dtype(dtype)?, angles.sin()?.to_dtype(dtype)?))
}

/// The generator of [`Llama::synthetic`] and [`TrainableWeights::synthetic`]: each call
/// gives the next f32 `(rows, cols)` matrix, uniform in `±√(3 / cols)` (variance `1 / fan_in`).
/// On the CPU each matrix has its own seed derived from `seed` and its index; on CUDA the
/// device generator is seeded once, here, and draws the matrices in call order.
fn synthetic_init(seed: u64, device: &Device) -> Result<impl FnMut(usize, usize) -> Result<Tensor> + '_> {
    if device.is_cuda() {
        device.set_seed(seed)?;
    }
    let mut tensor_index = 0u64;
    Ok(move |rows: usize, cols: usize| -> Result<Tensor> {
        tensor_index += 1;
        let bound = (3.0 / cols as f64).sqrt();
        if device.is_cpu() {
            cpu_uniform(rows * cols, bound, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ tensor_index)?
                .reshape((rows, cols))
        } else {
            Tensor::rand(-bound as f32, bound as f32, (rows, cols), device)
        }
    })
}

/// `n` uniform values in `[-bound, bound)` from a seeded generator, as an f32 tensor.
fn cpu_uniform(n: usize, bound: f64, seed: u64) -> Result<Tensor> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let bound = bound as f32;
    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-bound..bound)).collect();
    Tensor::from_vec(values, n, &Device::Cpu)
}

/// Index of the largest logit.
pub fn argmax(logits: &Tensor) -> Result<u32> {
    logits.argmax(D::Minus1)?.to_scalar::<u32>()
}
