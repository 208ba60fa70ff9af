//! Tiny random-weight models of the real architecture (`qwen35`: Gated DeltaNet layers plus
//! one gated-attention layer), written with the project's own GGUF writer, so that engine, agent
//! and benchmark tests run real llama.cpp inference in milliseconds without downloading weights.
//! The weights are deterministic noise: such a model produces meaningless text, so tests compare
//! tokens and logits between code paths, never the text itself.
//!
//! This module owns the shapes and metadata of a *valid* `qwen35` file; the converter owns the
//! mapping from a real checkpoint.

pub mod vocab;

use crate::gguf::{
    f32_to_f16_bytes, quantize_q8_0, GgmlType, GgufWriteError, GgufWriter, TensorSpec, Value,
};
use std::io::BufWriter;
use std::path::Path;
pub use vocab::Vocab;

/// Shape and content choices for a tiny model.
#[derive(Debug, Clone)]
pub struct TinySpec {
    pub vocab: Vocab,
    /// Element type of the 2-D weight matrices (F32, F16 or Q8_0).
    pub weight_type: GgmlType,
    pub seed: u64,
    pub n_embd: u64,
    pub n_layer: u64,
    pub n_ff: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    /// DeltaNet key heads (`ssm.group_count`) and value heads (`ssm.time_step_rank`).
    pub ssm_k_heads: u64,
    pub ssm_v_heads: u64,
    pub ssm_head_dim: u64,
    pub context_length: u32,
    pub chat_template: Option<String>,
    /// Append one multi-token-prediction block (`nextn_predict_layers` = 1), as FrogNano's
    /// checkpoint has: a gated-attention decoder block plus the `nextn.*` projection and
    /// norms, written after every other tensor so the rest of the file is the same noise.
    pub mtp: bool,
}

impl TinySpec {
    /// The usual test model: synthetic vocabulary, 4 layers (3 DeltaNet + 1 attention), Q8_0.
    pub fn synthetic() -> Self {
        Self::with_vocab(vocab::synthetic())
    }

    pub fn with_vocab(vocab: Vocab) -> Self {
        Self {
            vocab,
            weight_type: GgmlType::Q8_0,
            seed: 0x0111_19ad,
            n_embd: 64,
            n_layer: 4,
            n_ff: 192,
            n_head: 4,
            n_head_kv: 2,
            head_dim: 32,
            ssm_k_heads: 2,
            ssm_v_heads: 4,
            ssm_head_dim: 16,
            context_length: 32_768,
            chat_template: None,
            mtp: false,
        }
    }
}

impl TinySpec {
    /// A model for quantisation tests: every weight matrix's rows are a multiple of 256
    /// elements (llama.cpp's K-quant block), as in the real model, so no tensor falls back to
    /// a 32-block type; F16 weights, the input llama.cpp's quantizer expects. 4 layers,
    /// embedding 256, FFN 512, attention 4 x 64 (2 KV heads), DeltaNet 2 key / 4 value heads x 64.
    pub fn quantizable(vocab: Vocab) -> Self {
        Self {
            weight_type: GgmlType::F16,
            n_embd: 256,
            n_ff: 512,
            head_dim: 64,
            ssm_head_dim: 64,
            ..Self::with_vocab(vocab)
        }
    }
}

/// Deterministic noise (splitmix64), so the same spec always gives the same file.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // uniform in [-1, 1)
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn fill(&mut self, n: u64, scale: f32, offset: f32) -> Vec<f32> {
        (0..n).map(|_| offset + scale * self.next()).collect()
    }
}

/// How a tensor's values are drawn.
enum Init {
    /// Weight matrix: uniform noise scaled by 1/sqrt(row length), stored in the weight type.
    Matrix,
    /// F32 vector around `offset` with spread `scale`.
    Vector { offset: f32, scale: f32 },
}

/// The tensors each block lists, in file order: name, dimensions, how its values are drawn.
type Plan = Vec<(String, Vec<u64>, Init)>;

/// A gated-attention block's attention tensors (the query projection is doubled: query and
/// gate), named by `b`.
fn attention(plan: &mut Plan, spec: &TinySpec, b: &dyn Fn(&str) -> String) {
    let e = spec.n_embd;
    let q = spec.head_dim * spec.n_head;
    let kv = spec.head_dim * spec.n_head_kv;
    let norm = || Init::Vector {
        offset: 1.0,
        scale: 0.1,
    };
    plan.push((b("attn_q.weight"), vec![e, q * 2], Init::Matrix));
    plan.push((b("attn_k.weight"), vec![e, kv], Init::Matrix));
    plan.push((b("attn_v.weight"), vec![e, kv], Init::Matrix));
    plan.push((b("attn_output.weight"), vec![q, e], Init::Matrix));
    plan.push((b("attn_q_norm.weight"), vec![spec.head_dim], norm()));
    plan.push((b("attn_k_norm.weight"), vec![spec.head_dim], norm()));
}

/// A block's feed-forward tensors, named by `b`.
fn ffn(plan: &mut Plan, spec: &TinySpec, b: &dyn Fn(&str) -> String) {
    let (e, ff) = (spec.n_embd, spec.n_ff);
    plan.push((b("ffn_gate.weight"), vec![e, ff], Init::Matrix));
    plan.push((b("ffn_up.weight"), vec![e, ff], Init::Matrix));
    plan.push((b("ffn_down.weight"), vec![ff, e], Init::Matrix));
}

/// Write the model described by `spec` to `path` (not atomically: tests own the directory).
pub fn write(path: &Path, spec: &TinySpec) -> Result<(), GgufWriteError> {
    let arch = "qwen35";
    let k = |s: &str| format!("{arch}.{s}");
    let n_vocab = spec.vocab.tokens.len() as u64;
    let (e, ff) = (spec.n_embd, spec.n_ff);
    let key_dim = spec.ssm_head_dim * spec.ssm_k_heads;
    let value_dim = spec.ssm_head_dim * spec.ssm_v_heads;
    let conv_dim = key_dim * 2 + value_dim;
    let conv_kernel = 4u64;

    let mut w = GgufWriter::new();
    w.set("general.architecture", Value::String(arch.into()))
        .set(
            "general.name",
            Value::String("lilypad tiny test model".into()),
        )
        .set(
            k("block_count"),
            Value::U32((spec.n_layer + u64::from(spec.mtp)) as u32),
        )
        .set(k("context_length"), Value::U32(spec.context_length))
        .set(k("embedding_length"), Value::U32(e as u32))
        .set(k("feed_forward_length"), Value::U32(ff as u32))
        .set(k("attention.head_count"), Value::U32(spec.n_head as u32))
        .set(
            k("attention.head_count_kv"),
            Value::U32(spec.n_head_kv as u32),
        )
        .set(k("attention.key_length"), Value::U32(spec.head_dim as u32))
        .set(
            k("attention.value_length"),
            Value::U32(spec.head_dim as u32),
        )
        .set(k("attention.layer_norm_rms_epsilon"), Value::F32(1e-6))
        .set(k("rope.freq_base"), Value::F32(1e7))
        .set(k("rope.dimension_count"), Value::U32(8))
        .set(k("rope.dimension_sections"), Value::i32s([2, 1, 1, 0]))
        .set(k("ssm.conv_kernel"), Value::U32(conv_kernel as u32))
        .set(k("ssm.state_size"), Value::U32(spec.ssm_head_dim as u32))
        .set(k("ssm.group_count"), Value::U32(spec.ssm_k_heads as u32))
        .set(k("ssm.time_step_rank"), Value::U32(spec.ssm_v_heads as u32))
        .set(k("ssm.inner_size"), Value::U32(value_dim as u32))
        .set(k("full_attention_interval"), Value::U32(4))
        .set("tokenizer.ggml.model", Value::String("gpt2".into()))
        .set("tokenizer.ggml.pre", Value::String("qwen35".into()))
        .set(
            "tokenizer.ggml.tokens",
            Value::strings(spec.vocab.tokens.iter().cloned()),
        )
        .set(
            "tokenizer.ggml.token_type",
            Value::i32s(spec.vocab.types.iter().copied()),
        )
        .set(
            "tokenizer.ggml.merges",
            Value::strings(spec.vocab.merges.iter().cloned()),
        )
        .set("tokenizer.ggml.add_bos_token", Value::Bool(false));
    for (key, tok) in [
        ("tokenizer.ggml.eos_token_id", "<|im_end|>"),
        ("tokenizer.ggml.padding_token_id", "<|endoftext|>"),
        ("tokenizer.ggml.bos_token_id", "<|endoftext|>"),
    ] {
        if let Some(id) = spec.vocab.id_of(tok) {
            w.set(key, Value::U32(id));
        }
    }
    if let Some(t) = &spec.chat_template {
        w.set("tokenizer.chat_template", Value::String(t.clone()));
    }
    if spec.mtp {
        w.set(k("nextn_predict_layers"), Value::U32(1));
    }

    let wt = spec.weight_type;
    let norm = Init::Vector {
        offset: 1.0,
        scale: 0.1,
    };
    let mut plan: Plan = vec![
        ("token_embd.weight".into(), vec![e, n_vocab], Init::Matrix),
        ("output_norm.weight".into(), vec![e], norm),
    ];
    for il in 0..spec.n_layer {
        let b = |s: &str| format!("blk.{il}.{s}");
        let norm = || Init::Vector {
            offset: 1.0,
            scale: 0.1,
        };
        plan.push((b("attn_norm.weight"), vec![e], norm()));
        plan.push((b("post_attention_norm.weight"), vec![e], norm()));
        if (il + 1) % 4 == 0 {
            attention(&mut plan, spec, &b);
        } else {
            plan.push((b("attn_qkv.weight"), vec![e, conv_dim], Init::Matrix));
            plan.push((b("attn_gate.weight"), vec![e, value_dim], Init::Matrix));
            let conv = Init::Vector {
                offset: 0.0,
                scale: 0.5,
            };
            plan.push((b("ssm_conv1d.weight"), vec![conv_kernel, conv_dim], conv));
            let dt = Init::Vector {
                offset: 0.0,
                scale: 1.0,
            };
            plan.push((b("ssm_dt.bias"), vec![spec.ssm_v_heads], dt));
            // ssm_a is -exp(A_log): negative, around -1.
            let a = Init::Vector {
                offset: -1.0,
                scale: 0.5,
            };
            plan.push((b("ssm_a"), vec![spec.ssm_v_heads], a));
            plan.push((
                b("ssm_beta.weight"),
                vec![e, spec.ssm_v_heads],
                Init::Matrix,
            ));
            plan.push((
                b("ssm_alpha.weight"),
                vec![e, spec.ssm_v_heads],
                Init::Matrix,
            ));
            plan.push((b("ssm_norm.weight"), vec![spec.ssm_head_dim], norm()));
            plan.push((b("ssm_out.weight"), vec![value_dim, e], Init::Matrix));
        }
        ffn(&mut plan, spec, &b);
    }

    if spec.mtp {
        // The MTP block: llama.cpp's qwen35 reads it as a full-attention block at index
        // `n_layer`, followed by the projection of [embedding; hidden] back to the embedding.
        let b = |s: &str| format!("blk.{}.{s}", spec.n_layer);
        let norm = || Init::Vector {
            offset: 1.0,
            scale: 0.1,
        };
        plan.push((b("attn_norm.weight"), vec![e], norm()));
        plan.push((b("post_attention_norm.weight"), vec![e], norm()));
        attention(&mut plan, spec, &b);
        ffn(&mut plan, spec, &b);
        plan.push((b("nextn.eh_proj.weight"), vec![2 * e, e], Init::Matrix));
        plan.push((b("nextn.enorm.weight"), vec![e], norm()));
        plan.push((b("nextn.hnorm.weight"), vec![e], norm()));
        plan.push((b("nextn.shared_head_norm.weight"), vec![e], norm()));
    }

    let type_of = |init: &Init, dims: &[u64]| match init {
        // Q8_0 needs rows that fill whole blocks; anything else stays F32.
        Init::Matrix if wt != GgmlType::Q8_0 || dims[0].is_multiple_of(32) => wt,
        _ => GgmlType::F32,
    };
    for (name, dims, init) in &plan {
        w.add_tensor(TensorSpec::new(name.clone(), dims, type_of(init, dims)))?;
    }
    let file = std::fs::File::create(path)?;
    let mut stream = w.begin(BufWriter::new(file))?;
    let mut noise = Noise(spec.seed);
    for (name, dims, init) in &plan {
        let n: u64 = dims.iter().product();
        let values = match init {
            Init::Matrix => noise.fill(n, 1.0 / (dims[0] as f32).sqrt(), 0.0),
            Init::Vector { offset, scale } => noise.fill(n, *scale, *offset),
        };
        let bytes = match type_of(init, dims) {
            GgmlType::Q8_0 => quantize_q8_0(&values),
            GgmlType::F16 => f32_to_f16_bytes(&values),
            _ => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        stream.write_tensor(name, &bytes)?;
    }
    stream.finish()?;
    Ok(())
}
