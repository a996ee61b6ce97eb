//! More candle-transformers 0.11.1 models through the [patch], with random weights at small
//! shapes: each built twice from the same weights, `use_flash_attn: true` (our op, through
//! `candle_flash_attn::flash_attn`) and `false` (the model's own matmul-mask-softmax branch),
//! and once on the CPU as the oracle (common/mod.rs): in f64 for gemma and gemma2, whose
//! RmsNorm is their own code; in f32 for mistral, whose `candle_nn::rms_norm` has no f64 CPU
//! kernel, with the neighbouring-f32-weights run as the yardstick (common/mod.rs explains
//! it; the criterion is the same: flash <= 2 x yardstick + floor). The schedule prefills 12 tokens,
//! then a chunk of 5 (causal against the cache: bottom-right), then decodes 3 tokens.
//!
//! Where the flash branch of a model drops a feature that its naive branch applies, the test
//! shows the mismatch and names the upstream line (docs/candle-transformers.md lists them):
//! - mistral.rs:291 calls `flash_attn(q, k, v, scale, q_len > 1)`: no sliding window, which
//!   the naive branch applies through its mask (mistral.rs:406, `j + sliding_window < i`).
//! - gemma2.rs:238 calls `flash_attn(q, k, v, scale, mask.is_some())`: no softcap, which the
//!   naive branch applies at gemma2.rs:243-246, and no sliding window (mask, gemma2.rs:405).

mod common;

use std::collections::HashMap;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Activation, VarBuilder, VarMap};
use candle_transformers::models::{gemma, gemma2, mistral};
use common::StepError;

const VOCAB: usize = 128;
const TOKENS: usize = 20;
const CHUNKS: [usize; 5] = [12, 5, 1, 1, 1];

/// A causal LM of candle-transformers: `forward(input_ids, seqlen_offset)`.
trait Lm {
    fn forward(&mut self, ids: &Tensor, offset: usize) -> Result<Tensor>;
}
impl Lm for mistral::Model {
    fn forward(&mut self, ids: &Tensor, offset: usize) -> Result<Tensor> {
        mistral::Model::forward(self, ids, offset)
    }
}
impl Lm for gemma::Model {
    fn forward(&mut self, ids: &Tensor, offset: usize) -> Result<Tensor> {
        gemma::Model::forward(self, ids, offset)
    }
}
impl Lm for gemma2::Model {
    fn forward(&mut self, ids: &Tensor, offset: usize) -> Result<Tensor> {
        gemma2::Model::forward(self, ids, offset)
    }
}

type Build = dyn Fn(bool, VarBuilder) -> Result<Box<dyn Lm>>;

/// Each step's logits (f32 on the CPU) over the schedule.
fn run(model: &mut dyn Lm, device: &Device) -> Result<Vec<Tensor>> {
    let tokens: Vec<u32> = (0..TOKENS as u32).map(|i| (i * 37 + 11) % VOCAB as u32).collect();
    let mut out = Vec::new();
    let mut offset = 0;
    for len in CHUNKS {
        let ids = Tensor::new(&tokens[offset..offset + len], device)?.unsqueeze(0)?;
        let logits = model.forward(&ids, offset)?;
        out.push(logits.flatten_all()?.to_dtype(DType::F32)?.to_device(&Device::Cpu)?);
        offset += len;
    }
    Ok(out)
}

/// What the naive branch of a model can run in on the CPU (module docs).
#[derive(Clone, Copy)]
enum Oracle {
    F64,
    /// An f32 reference and the neighbouring-f32-weights yardstick.
    F32,
}

/// Flash and naive in the check's dtype and device, the naive oracle on the CPU (and, for an
/// f32 reference, the neighbour run), all from the same weights. Logits per step.
struct Logits {
    flash: Vec<Tensor>,
    naive: Vec<Tensor>,
    oracle: Vec<Tensor>,
    neighbour: Option<Vec<Tensor>>,
    dtype: DType,
}

impl Logits {
    fn of(build: &Build, oracle: Oracle) -> Result<Self> {
        let device = common::device()?;
        let dtype = common::dtype(&device)?;
        let varmap = VarMap::new();
        // The first build creates the weights (the models' own inits), the second reuses them.
        let _ = build(false, VarBuilder::from_varmap(&varmap, dtype, &device))?;
        let weights: HashMap<String, Tensor> =
            varmap.data().lock().unwrap().iter().map(|(k, v)| (k.clone(), v.as_tensor().clone())).collect();
        Self::from_weights(build, &weights, dtype, &device, oracle)
    }

    fn from_weights(
        build: &Build,
        weights: &HashMap<String, Tensor>,
        dtype: DType,
        device: &Device,
        oracle: Oracle,
    ) -> Result<Self> {
        let mut flash = build(true, VarBuilder::from_tensors(weights.clone(), dtype, device))?;
        let mut naive = build(false, VarBuilder::from_tensors(weights.clone(), dtype, device))?;
        let odtype = match oracle {
            Oracle::F64 => DType::F64,
            Oracle::F32 => DType::F32,
        };
        let on_cpu: HashMap<String, Tensor> = weights
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.to_device(&Device::Cpu)?.to_dtype(odtype)?)))
            .collect::<Result<_>>()?;
        let neighbour = match oracle {
            Oracle::F64 => None,
            Oracle::F32 => {
                let w = common::neighbour_weights(&on_cpu, 16)?;
                let mut m = build(false, VarBuilder::from_tensors(w, DType::F32, &Device::Cpu))?;
                Some(run(m.as_mut(), &Device::Cpu)?)
            }
        };
        let mut reference = build(false, VarBuilder::from_tensors(on_cpu, odtype, &Device::Cpu))?;
        Ok(Self {
            flash: run(flash.as_mut(), device)?,
            naive: run(naive.as_mut(), device)?,
            oracle: run(reference.as_mut(), &Device::Cpu)?,
            neighbour,
            dtype,
        })
    }

    fn errors(&self) -> Result<Vec<StepError>> {
        (0..CHUNKS.len())
            .map(|i| match &self.neighbour {
                None => StepError::new(&self.flash[i], &self.naive[i], &self.oracle[i], self.dtype),
                Some(nb) => StepError::against_f32(&self.flash[i], &self.naive[i], &nb[i], &self.oracle[i], self.dtype),
            })
            .collect()
    }

    /// Every step within the tolerance.
    fn assert_agree(&self, what: &str) -> Result<()> {
        for (i, e) in self.errors()?.iter().enumerate() {
            eprintln!("{what}: step {i} (chunk of {}): {e:?}", CHUNKS[i]);
            assert!(e.ok(), "{what}: step {i}: flash logits too far from the oracle: {e:?}");
        }
        Ok(())
    }
}

fn mistral_cfg(use_flash_attn: bool, sliding_window: Option<usize>) -> mistral::Config {
    mistral::Config {
        vocab_size: VOCAB,
        hidden_size: 64,
        intermediate_size: 128,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        head_dim: None,
        num_key_value_heads: 2,
        hidden_act: Activation::Silu,
        max_position_embeddings: 64,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.,
        sliding_window,
        use_flash_attn,
    }
}

fn gemma2_cfg(softcap: Option<f64>, sliding_window: Option<usize>) -> gemma2::Config {
    gemma2::Config {
        attention_bias: false,
        head_dim: 16,
        hidden_activation: Activation::GeluPytorchTanh,
        hidden_size: 64,
        intermediate_size: 128,
        num_attention_heads: 4,
        num_hidden_layers: 2,
        num_key_value_heads: 2,
        rms_norm_eps: 1e-6,
        rope_theta: 10_000.,
        vocab_size: VOCAB,
        final_logit_softcapping: None,
        attn_logit_softcapping: softcap,
        query_pre_attn_scalar: 16,
        sliding_window,
        max_position_embeddings: 64,
    }
}

fn mistral(sliding_window: Option<usize>) -> Box<Build> {
    Box::new(
        move |flash, vb| Ok(Box::new(mistral::Model::new(&mistral_cfg(flash, sliding_window), vb)?) as Box<dyn Lm>),
    )
}

fn gemma2(softcap: Option<f64>, sliding_window: Option<usize>) -> Box<Build> {
    Box::new(move |flash, vb| {
        Ok(Box::new(gemma2::Model::new(flash, &gemma2_cfg(softcap, sliding_window), vb)?) as Box<dyn Lm>)
    })
}

#[test]
fn mistral_without_sliding_window_agrees() -> Result<()> {
    Logits::of(&*mistral(None), Oracle::F32)?.assert_agree("mistral")
}

#[test]
fn gemma_agrees() -> Result<()> {
    let build: Box<Build> = Box::new(|flash, vb| {
        let cfg = gemma::Config {
            attention_bias: false,
            head_dim: 16,
            hidden_act: None,
            hidden_activation: Some(Activation::GeluPytorchTanh),
            hidden_size: 64,
            intermediate_size: 128,
            num_attention_heads: 4,
            num_hidden_layers: 2,
            num_key_value_heads: 1,
            rms_norm_eps: 1e-6,
            rope_theta: 10_000.,
            vocab_size: VOCAB,
            max_position_embeddings: 64,
        };
        Ok(Box::new(gemma::Model::new(flash, &cfg, vb)?) as Box<dyn Lm>)
    });
    Logits::of(&*build, Oracle::F64)?.assert_agree("gemma")
}

#[test]
fn gemma2_without_softcap_or_window_agrees() -> Result<()> {
    Logits::of(&*gemma2(None, None), Oracle::F64)?.assert_agree("gemma2")
}

/// The first step (a 12-token prefill) is where a window of 4 masks keys in the naive branch.
/// The flash branch's logits equal those of the same weights with no window at all: the
/// window never reaches `flash_attn`.
fn assert_dropped(name: &str, with: &Logits, without: &Logits, upstream: &str) -> Result<()> {
    let e = with.errors()?[0];
    let same_as_without = common::max_diff(&with.flash[0], &without.flash[0])?;
    eprintln!(
        "{name}: flash vs oracle {} > tolerance {} (naive {}); flash with the feature vs flash without: {same_as_without}",
        e.flash, e.bound, e.naive
    );
    assert!(
        !e.ok(),
        "{name}: flash now matches naive ({e:?}): has upstream started passing the feature ({upstream})? \
         update docs/candle-transformers.md and this test"
    );
    assert_eq!(same_as_without, 0.0, "{name}: the flash branch's output depends on the feature after all");
    eprintln!("{name}: MISMATCH, as expected: {upstream}");
    Ok(())
}

/// Same weights with and without the feature: VarMaps are filled by the first build, so build
/// both from one closure over a shared VarMap.
fn with_and_without(a: &Build, b: &Build, oracle: Oracle) -> Result<(Logits, Logits)> {
    let device = common::device()?;
    let dtype = common::dtype(&device)?;
    let varmap = VarMap::new();
    // Create the weights once (through `a`'s naive model), then run both configurations.
    let _ = a(false, VarBuilder::from_varmap(&varmap, dtype, &device))?;
    let weights: HashMap<String, Tensor> =
        varmap.data().lock().unwrap().iter().map(|(k, v)| (k.clone(), v.as_tensor().clone())).collect();
    Ok((
        Logits::from_weights(a, &weights, dtype, &device, oracle)?,
        Logits::from_weights(b, &weights, dtype, &device, oracle)?,
    ))
}

#[test]
fn mistral_flash_branch_drops_the_sliding_window() -> Result<()> {
    let (with, without) = with_and_without(&*mistral(Some(4)), &*mistral(None), Oracle::F32)?;
    without.assert_agree("mistral, no window")?;
    assert_dropped(
        "mistral, sliding_window 4",
        &with,
        &without,
        "candle-transformers 0.11.1 src/models/mistral.rs:291 calls flash_attn(&q, &k, &v, softmax_scale, q_len > 1) \
         without the window that the naive mask applies (mistral.rs:406)",
    )
}

#[test]
fn gemma2_flash_branch_drops_the_softcap() -> Result<()> {
    let (with, without) = with_and_without(&*gemma2(Some(SOFTCAP), None), &*gemma2(None, None), Oracle::F64)?;
    without.assert_agree("gemma2, no softcap")?;
    assert_dropped(
        "gemma2, attn_logit_softcapping",
        &with,
        &without,
        "candle-transformers 0.11.1 src/models/gemma2.rs:238 calls flash_attn(&q, &k, &v, scale, attention_mask.is_some()) \
         without the softcap that the naive branch applies (gemma2.rs:243-246)",
    )
}

#[test]
fn gemma2_flash_branch_drops_the_sliding_window() -> Result<()> {
    let (with, without) = with_and_without(&*gemma2(None, Some(4)), &*gemma2(None, None), Oracle::F64)?;
    assert_dropped(
        "gemma2, sliding_window 4",
        &with,
        &without,
        "candle-transformers 0.11.1 src/models/gemma2.rs:238 passes no window; the naive mask applies it (gemma2.rs:405)",
    )
}

/// Gemma 2's checkpoints use 50; the random weights here give attention scores of order 1,
/// where a cap of 50 changes them by ~1e-4: a cap of 2 shows the dropped feature plainly in
/// every dtype.
const SOFTCAP: f64 = 2.0;
