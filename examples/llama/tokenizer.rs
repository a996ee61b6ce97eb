//! The tokenizer stored in a GGUF's metadata (`tokenizer.ggml.*`), rebuilt with the
//! `tokenizers` crate: GPT-2 byte-level BPE (`tokenizer.ggml.model = "gpt2"`), with the
//! control tokens registered as special so that they are matched whole and never merged.

use candle_core::quantized::gguf_file;
use candle_core::{bail, Result};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, PreTokenizerWrapper, Tokenizer};

use super::model::metadata;

/// GGUF token types (llama.cpp's `llama_token_type`) that are special, not text.
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

pub struct GgufTokenizer {
    pub tokenizer: Tokenizer,
    /// Generation stops at these ids (`eos`, and `<|endoftext|>`/`<|im_end|>` when present).
    pub stop_ids: Vec<u32>,
    /// The system line of the GGUF's ChatML template, when it has a default one.
    pub default_system: Option<String>,
}

fn err(e: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(format!("tokenizer: {e}"))
}

impl GgufTokenizer {
    pub fn from_gguf(content: &gguf_file::Content) -> Result<Self> {
        let model = metadata(content, "tokenizer.ggml.model")?.to_string()?;
        if model != "gpt2" {
            bail!("tokenizer.ggml.model is {model:?}; only GPT-2 byte-level BPE (\"gpt2\") is supported")
        }
        let tokens: Vec<String> = metadata(content, "tokenizer.ggml.tokens")?
            .to_vec()?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<Result<_>>()?;
        let merges: Vec<(String, String)> = metadata(content, "tokenizer.ggml.merges")?
            .to_vec()?
            .iter()
            .map(|v| {
                let m = v.to_string()?;
                match m.split_once(' ') {
                    Some((a, b)) => Ok((a.to_string(), b.to_string())),
                    None => bail!("tokenizer: merge {m:?} is not two tokens separated by a space"),
                }
            })
            .collect::<Result<_>>()?;
        let token_types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v.to_vec()?.iter().map(|t| t.to_i32()).collect::<Result<_>>()?,
            None => vec![1; tokens.len()],
        };

        let vocab: tokenizers::models::bpe::Vocab =
            tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(err)?;
        let mut tokenizer = Tokenizer::new(bpe);
        // llama.cpp's "smollm"/"gpt2"-family pre-tokenizers: digits split one by one, then the
        // GPT-2 regex with byte-level mapping (no prefix space: add_space_prefix is false).
        let individual_digits = matches!(
            content.metadata.get("tokenizer.ggml.pre").and_then(|v| v.to_string().ok()).map(String::as_str),
            Some("smollm") | Some("llama3") | Some("llama-bpe") | Some("starcoder")
        );
        let byte_level = ByteLevel::new(false, true, true);
        let pre: PreTokenizerWrapper = if individual_digits {
            Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into()
        } else {
            byte_level.into()
        };
        tokenizer.with_pre_tokenizer(Some(pre));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
        let special: Vec<AddedToken> = tokens
            .iter()
            .zip(&token_types)
            .filter(|(_, &t)| t == TOKEN_TYPE_CONTROL || t == TOKEN_TYPE_USER_DEFINED)
            .map(|(tok, _)| AddedToken::from(tok.clone(), true))
            .collect();
        tokenizer.add_special_tokens(special).map_err(err)?;

        let mut stop_ids = Vec::new();
        if let Some(v) = content.metadata.get("tokenizer.ggml.eos_token_id") {
            stop_ids.push(v.to_u32()?);
        }
        for name in ["<|endoftext|>", "<|im_end|>", "<|eot_id|>"] {
            if let Some(id) = tokenizer.token_to_id(name) {
                if !stop_ids.contains(&id) {
                    stop_ids.push(id);
                }
            }
        }
        let default_system = content
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .and_then(|t| chatml_default_system(t));
        Ok(Self { tokenizer, stop_ids, default_system })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.tokenizer.encode(text, false).map_err(err)?.get_ids().to_vec())
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer.decode(ids, false).map_err(err)
    }

    /// The ChatML prompt for one user message, ending where the assistant's answer starts.
    pub fn chat_prompt(&self, user: &str) -> String {
        let system = match &self.default_system {
            Some(s) => format!("<|im_start|>system\n{s}<|im_end|>\n"),
            None => String::new(),
        };
        format!("{system}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
    }
}

/// The literal default system line of a ChatML jinja template
/// (`'<|im_start|>system\n…<|im_end|>`), if there is one. The newline may be a real one or
/// a jinja `\n` escape.
fn chatml_default_system(template: &str) -> Option<String> {
    let tag = "<|im_start|>system";
    let after_tag = &template[template.find(tag)? + tag.len()..];
    let body = after_tag.strip_prefix('\n').or_else(|| after_tag.strip_prefix("\\n"))?;
    let len = body.find("<|im_end|>")?;
    Some(body[..len].to_string())
}
