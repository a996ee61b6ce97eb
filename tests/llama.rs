//! The llama example's model and tokenizer on the CPU, with the real SmolLM2-135M weights
//! (fetched into the cache by scripts/fetch-model.sh on first use, as the example does).
//!
//! Expected values come from an independent float64 NumPy forward pass of the
//! same dequantized GGUF: "The capital of France is" encodes to [504, 3575, 282, 4649, 314]
//! and its top-1 next token is " Paris" (id 7042).

// The example's own modules; a few items only the example's CLI uses.
#[allow(dead_code)]
#[path = "../examples/llama/fetch.rs"]
mod fetch;
#[allow(dead_code)]
#[path = "../examples/llama/model.rs"]
mod model;
#[allow(dead_code)]
#[path = "../examples/llama/text.rs"]
mod text;
#[path = "../examples/llama/tokenizer.rs"]
mod tokenizer;

use candle_core::{DType, Device, Result, Tensor};
use model::{Attention, Config, KvCache, Llama};
use tokenizer::GgufTokenizer;

const REFERENCE_PROMPT: &str = "The capital of France is";
const REFERENCE_IDS: [u32; 5] = [504, 3575, 282, 4649, 314];
const PARIS_ID: u32 = 7042;

fn load(max_positions: usize) -> Result<(Llama, GgufTokenizer)> {
    let path = fetch::default_model_path()?;
    let (content, mut file) = model::open_gguf(&path)?;
    let tokenizer = GgufTokenizer::from_gguf(&content)?;
    let model = Llama::from_gguf(&content, &mut file, &Device::Cpu, DType::F32, max_positions)?;
    Ok((model, tokenizer))
}

fn greedy(model: &Llama, prompt: &[u32], steps: usize, attention: Attention) -> Result<Vec<u32>> {
    let mut cache = KvCache::new(model.config(), prompt.len() + steps, model.dtype(), &Device::Cpu)?;
    let mut next = model::argmax(&model.forward(prompt, &mut cache, attention)?)?;
    let mut out = vec![next];
    while out.len() < steps {
        next = model::argmax(&model.forward(&[next], &mut cache, attention)?)?;
        out.push(next);
    }
    Ok(out)
}

#[test]
fn tokenizer_matches_reference_ids_and_round_trips() -> Result<()> {
    let path = fetch::default_model_path()?;
    let (content, _) = model::open_gguf(&path)?;
    let tok = GgufTokenizer::from_gguf(&content)?;
    assert_eq!(tok.encode(REFERENCE_PROMPT)?, REFERENCE_IDS);
    assert_eq!(tok.decode(&[PARIS_ID])?, " Paris");
    // Digits, punctuation, newlines, runs of spaces, non-ASCII (multi-byte UTF-8 pieces)
    // and a special token all come back byte for byte.
    let samples = [
        text::PASSAGE,
        "In 1813, 42 people paid £3.50 each — naïve café prices!\n\n\tTabs,   spaces  and ünïcödé 東京 🙂",
        "<|im_start|>user\nHello<|im_end|>\n",
    ];
    for s in samples {
        let ids = tok.encode(s)?;
        assert_eq!(tok.decode(&ids)?, s, "round trip of {s:?} through {ids:?}");
    }
    // Special tokens are matched whole, not spelled out with BPE pieces.
    assert_eq!(tok.encode("<|im_start|>")?, [1]);
    assert_eq!(tok.encode("<|im_end|>")?, [2]);
    Ok(())
}

#[test]
fn chat_template_long_prompt_and_stop_tokens() -> Result<()> {
    let path = fetch::default_model_path()?;
    let (content, _) = model::open_gguf(&path)?;
    let tok = GgufTokenizer::from_gguf(&content)?;
    // The GGUF's template with its default system line, ending at the assistant's turn.
    assert_eq!(
        tok.chat_prompt("Hi"),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    // eos (<|im_end|>, id 2) and <|endoftext|> (id 0) end generation.
    assert!(tok.stop_ids.contains(&2) && tok.stop_ids.contains(&0), "{:?}", tok.stop_ids);
    for n in [1, 128, 2048] {
        let ids = text::long_prompt(n, |s| tok.encode(s))?;
        assert_eq!(ids.len(), n);
        assert!(tok.decode(&ids)?.starts_with("It"));
    }
    Ok(())
}

/// The synthetic models have the published parameter counts of the real ones, and the
/// SmolLM2 one is exactly what the GGUF says.
#[test]
fn synthetic_shapes_are_the_real_models() -> Result<()> {
    assert_eq!(Config::llama3_8b().num_parameters(), 8_030_261_248);
    assert_eq!(Config::llama2_7b().num_parameters(), 6_738_415_616);
    assert_eq!(Config::smollm2_135m().num_parameters(), 134_515_008);
    let (content, _) = model::open_gguf(&fetch::default_model_path()?)?;
    assert_eq!(Config::from_gguf(&content)?, Config::smollm2_135m());
    Ok(())
}

#[test]
fn top1_after_the_capital_of_france_is_paris() -> Result<()> {
    let (model, tok) = load(16)?;
    for attention in [Attention::Fused, Attention::Naive] {
        let mut cache = KvCache::new(model.config(), 16, DType::F32, &Device::Cpu)?;
        let logits = model.forward(&REFERENCE_IDS, &mut cache, attention)?;
        let top = model::argmax(&logits)?;
        assert_eq!(tok.decode(&[top])?, " Paris", "{attention:?} picked id {top}");
        // The reference's logit is 17.37 (f64); f32 with the same weights lands close.
        let logit = logits.get(PARIS_ID as usize)?.to_scalar::<f32>()?;
        assert!((logit - 17.37).abs() < 0.05, "{attention:?}: logit of \" Paris\" is {logit}, reference 17.37");
    }
    Ok(())
}

#[test]
fn greedy_decoding_agrees_between_fused_and_naive() -> Result<()> {
    const STEPS: usize = 40;
    let (model, tok) = load(64 + STEPS)?;
    let prompt = tok.encode("Once upon a time, in a small village by the sea,")?;
    let fused = greedy(&model, &prompt, STEPS, Attention::Fused)?;
    let naive = greedy(&model, &prompt, STEPS, Attention::Naive)?;
    assert_eq!(fused, naive, "fused: {:?}\nnaive: {:?}", tok.decode(&fused)?, tok.decode(&naive)?);
    assert_eq!(fused.len(), STEPS);

    // The independent float64 pass's greedy continuation of its prompt, 6 tokens.
    for attention in [Attention::Fused, Attention::Naive] {
        let paris = tok.decode(&greedy(&model, &REFERENCE_IDS, 6, attention)?)?;
        assert_eq!(paris, " Paris.\n\nThe answer", "{attention:?}");
    }
    Ok(())
}

/// A model small enough to build in milliseconds, with GQA (`kv_heads < heads`) or plain
/// multi-head attention; random weights.
fn tiny(num_kv_heads: usize) -> Config {
    Config {
        vocab_size: 97,
        hidden_size: 64,
        intermediate_size: 96,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads,
        head_dim: 16,
        rope_theta: 10_000.0,
        rms_norm_eps: 1e-5,
        context_length: 64,
        tied_embeddings: false,
    }
}

/// Prefill in one call, prefill in chunks, and token-by-token decoding give the right
/// logits with either back end (both masks are bottom-right aligned), for MQA, GQA and MHA.
/// The oracle is the same model in f64 (naive attention, one prefill); each f32 variant's
/// error must be within twice the error of the plain f32 naive prefill, plus a floor of a
/// few f32 ulps of the logits' scale.
#[test]
fn backends_and_chunkings_agree_on_a_tiny_model() -> Result<()> {
    let tokens: Vec<u32> = (0..23u32).map(|i| (i * 37 + 11) % 97).collect();
    let prefill = |model: &Llama, attention: Attention, chunk: usize| -> Result<Tensor> {
        let mut cache = KvCache::new(model.config(), 32, model.dtype(), &Device::Cpu)?;
        let mut logits = None;
        for piece in tokens.chunks(chunk) {
            logits = Some(model.forward(piece, &mut cache, attention)?);
        }
        Ok(logits.expect("tokens are not empty"))
    };
    let max_abs = |t: &Tensor| -> Result<f32> { t.abs()?.max_all()?.to_scalar::<f32>() };
    for kv_heads in [1, 2, 4] {
        // The same seed gives the same (f32-generated) weights in both dtypes.
        let oracle_model = Llama::synthetic(tiny(kv_heads), 7, &Device::Cpu, DType::F64, 32)?;
        let model = Llama::synthetic(tiny(kv_heads), 7, &Device::Cpu, DType::F32, 32)?;
        let oracle = prefill(&oracle_model, Attention::Naive, tokens.len())?;
        let naive_err = max_abs(&(prefill(&model, Attention::Naive, tokens.len())? - &oracle)?)?;
        let floor = 4.0 * f32::EPSILON * max_abs(&oracle)?;
        for attention in [Attention::Fused, Attention::Naive] {
            for chunk in [23, 8, 1] {
                let err = max_abs(&(prefill(&model, attention, chunk)? - &oracle)?)?;
                assert!(
                    err <= 2.0 * naive_err + floor,
                    "kv_heads {kv_heads}, {attention:?}, chunk {chunk}: error {err} vs f64, naive f32 prefill's is {naive_err}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn overflowing_the_cache_is_an_error() -> Result<()> {
    let model = Llama::synthetic(tiny(2), 1, &Device::Cpu, DType::F32, 8)?;
    let mut cache = KvCache::new(model.config(), 4, DType::F32, &Device::Cpu)?;
    model.forward(&[1, 2, 3], &mut cache, Attention::Fused)?;
    let err = model.forward(&[4, 5], &mut cache, Attention::Fused).unwrap_err().to_string();
    assert!(err.contains("needs 5 positions") && err.contains("holds 4"), "{err}");
    Ok(())
}
