//! A tiny synthetic Hugging Face Qwen3.5 checkpoint, written the way the real one is laid out
//! (`Qwen3_5ForConditionalGeneration`: config.json with `text_config`, `model.language_model.*`
//! tensors, a vision tower, an MTP block, tokenizer.json and tokenizer_config.json), with the
//! stored values kept so that tests can check the conversion numerically.

pub mod reference;

use lilypad::testmodel::vocab;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

pub const HIDDEN: u64 = 64;
pub const LAYERS: u64 = 4;
pub const FF: u64 = 192;
pub const HEADS: u64 = 4;
pub const KV_HEADS: u64 = 2;
pub const HEAD_DIM: u64 = 32;
pub const K_HEADS: u64 = 2;
pub const V_HEADS: u64 = 6;
pub const LIN_DIM: u64 = 16;
pub const KERNEL: u64 = 4;
pub const ROWS: u64 = 320;
pub const EPS: f32 = 1e-6;
pub const THETA: f32 = 1e7;
pub const ROPE_DIMS: usize = 8;

pub const KEY_DIM: u64 = K_HEADS * LIN_DIM;
pub const VALUE_DIM: u64 = V_HEADS * LIN_DIM;
pub const CONV_DIM: u64 = 2 * KEY_DIM + VALUE_DIM;

/// How a stored tensor is encoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stored {
    Bf16,
    F16,
    F32,
}

/// One tensor of the fixture: its shape, the exact values stored, how, and in which shard.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Vec<u64>,
    pub values: Vec<f32>,
    pub stored: Stored,
    pub shard: usize,
}

/// Choices for a fixture.
#[derive(Debug, Clone)]
pub struct Options {
    /// Two shards with an index; norms and SSM vectors F32, the MTP projection F16.
    pub mixed: bool,
    pub architecture: String,
    /// Replace a tensor's shape (for the refusal tests).
    pub bad_shape: Option<(String, Vec<u64>)>,
    /// Embedding rows (`vocab_size`); large values make a big checkpoint for measurements.
    pub rows: u64,
    /// FFN width; large values make a big checkpoint of many big tensors.
    pub ff: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            mixed: false,
            architecture: "Qwen3_5ForConditionalGeneration".into(),
            bad_shape: None,
            rows: ROWS,
            ff: FF,
        }
    }
}

/// Deterministic noise (splitmix64), uniform in [-1, 1).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Adds one tensor: name, shape, noise scale, offset, storage.
type AddFn<'a> = dyn FnMut(String, &[u64], f32, f32, Stored) + 'a;

/// The tensors of the fixture, by Hugging Face name.
pub fn tensors(opts: &Options) -> BTreeMap<String, Tensor> {
    let mut noise = Noise(7);
    let mut out = BTreeMap::new();
    let mut add = |name: String, shape: &[u64], scale: f32, offset: f32, stored: Stored| {
        let n: u64 = shape.iter().product();
        let raw: Vec<f32> = (0..n).map(|_| offset + scale * noise.next()).collect();
        let values = raw
            .iter()
            .map(|&v| match stored {
                Stored::Bf16 => half::bf16::from_f32(v).to_f32(),
                Stored::F16 => half::f16::from_f32(v).to_f32(),
                Stored::F32 => v,
            })
            .collect();
        let shard = usize::from(stored != Stored::Bf16);
        out.insert(
            name,
            Tensor {
                shape: shape.to_vec(),
                values,
                stored,
                shard,
            },
        );
    };
    let vec_ty = if opts.mixed {
        Stored::F32
    } else {
        Stored::Bf16
    };
    let (h, ff) = (HIDDEN, opts.ff);
    let mat = |cols: u64| 1.0 / (cols as f32).sqrt();
    add(
        "model.language_model.embed_tokens.weight".into(),
        &[opts.rows, h],
        1.0,
        0.0,
        Stored::Bf16,
    );
    add(
        "model.language_model.norm.weight".into(),
        &[h],
        0.1,
        0.0,
        vec_ty,
    );
    let block = |add: &mut AddFn<'_>, p: &str, attention: bool| {
        add(format!("{p}input_layernorm.weight"), &[h], 0.1, 0.0, vec_ty);
        add(
            format!("{p}post_attention_layernorm.weight"),
            &[h],
            0.1,
            0.0,
            vec_ty,
        );
        add(
            format!("{p}mlp.gate_proj.weight"),
            &[ff, h],
            mat(h),
            0.0,
            Stored::Bf16,
        );
        add(
            format!("{p}mlp.up_proj.weight"),
            &[ff, h],
            mat(h),
            0.0,
            Stored::Bf16,
        );
        add(
            format!("{p}mlp.down_proj.weight"),
            &[h, ff],
            mat(ff),
            0.0,
            Stored::Bf16,
        );
        if attention {
            let q = HEADS * HEAD_DIM;
            let kv = KV_HEADS * HEAD_DIM;
            add(
                format!("{p}self_attn.q_proj.weight"),
                &[2 * q, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                format!("{p}self_attn.k_proj.weight"),
                &[kv, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                format!("{p}self_attn.v_proj.weight"),
                &[kv, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                format!("{p}self_attn.o_proj.weight"),
                &[h, q],
                mat(q),
                0.0,
                Stored::Bf16,
            );
            add(
                format!("{p}self_attn.q_norm.weight"),
                &[HEAD_DIM],
                0.1,
                0.0,
                vec_ty,
            );
            add(
                format!("{p}self_attn.k_norm.weight"),
                &[HEAD_DIM],
                0.1,
                0.0,
                vec_ty,
            );
        } else {
            let la = |s: &str| format!("{p}linear_attn.{s}");
            add(
                la("in_proj_qkv.weight"),
                &[CONV_DIM, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                la("in_proj_z.weight"),
                &[VALUE_DIM, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                la("in_proj_b.weight"),
                &[V_HEADS, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                la("in_proj_a.weight"),
                &[V_HEADS, h],
                mat(h),
                0.0,
                Stored::Bf16,
            );
            add(
                la("conv1d.weight"),
                &[CONV_DIM, 1, KERNEL],
                0.5,
                0.0,
                Stored::Bf16,
            );
            add(la("dt_bias"), &[V_HEADS], 1.0, 0.0, vec_ty);
            add(la("A_log"), &[V_HEADS], 0.5, 0.0, vec_ty);
            add(la("norm.weight"), &[LIN_DIM], 0.1, 1.0, vec_ty);
            add(
                la("out_proj.weight"),
                &[h, VALUE_DIM],
                mat(VALUE_DIM),
                0.0,
                Stored::Bf16,
            );
        }
    };
    for il in 0..LAYERS {
        let p = format!("model.language_model.layers.{il}.");
        block(&mut add, &p, (il + 1) % 4 == 0);
    }
    block(&mut add, "mtp.layers.0.", true);
    let fc_ty = if opts.mixed {
        Stored::F16
    } else {
        Stored::Bf16
    };
    add("mtp.fc.weight".into(), &[h, 2 * h], mat(2 * h), 0.0, fc_ty);
    for n in [
        "mtp.pre_fc_norm_embedding.weight",
        "mtp.pre_fc_norm_hidden.weight",
        "mtp.norm.weight",
    ] {
        add(n.into(), &[h], 0.1, 0.0, vec_ty);
    }
    add(
        "model.visual.patch_embed.proj.weight".into(),
        &[16, 12],
        0.1,
        0.0,
        Stored::Bf16,
    );
    add(
        "model.visual.blocks.0.norm1.weight".into(),
        &[16],
        0.1,
        0.0,
        Stored::Bf16,
    );
    if let Some((name, shape)) = &opts.bad_shape {
        let t = out.get_mut(name).expect("bad_shape names a fixture tensor");
        let n: u64 = shape.iter().product();
        t.shape = shape.clone();
        t.values.resize(n as usize, 0.0);
    }
    out
}

fn encode(t: &Tensor) -> (Dtype, Vec<u8>) {
    match t.stored {
        Stored::Bf16 => (
            Dtype::BF16,
            t.values
                .iter()
                .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                .collect(),
        ),
        Stored::F16 => (
            Dtype::F16,
            t.values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
        ),
        Stored::F32 => (
            Dtype::F32,
            t.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    }
}

/// Write the checkpoint into `dir`; returns its tensors.
pub fn write(dir: &Path, opts: &Options) -> BTreeMap<String, Tensor> {
    let tensors = tensors(opts);
    let shards = if opts.mixed { 2 } else { 1 };
    let names: Vec<String> = (0..shards)
        .map(|i| match shards {
            1 => "model.safetensors".to_string(),
            n => format!("model-{:05}-of-{n:05}.safetensors", i + 1),
        })
        .collect();
    let mut weight_map = serde_json::Map::new();
    for (i, file) in names.iter().enumerate() {
        let encoded: Vec<(String, Vec<u64>, Dtype, Vec<u8>)> = tensors
            .iter()
            .filter(|(_, t)| shards == 1 || t.shard == i)
            .map(|(n, t)| {
                let (d, b) = encode(t);
                (n.clone(), t.shape.clone(), d, b)
            })
            .collect();
        let views: Vec<(String, TensorView<'_>)> = encoded
            .iter()
            .map(|(n, s, d, b)| {
                let shape = s.iter().map(|&x| x as usize).collect();
                (
                    n.clone(),
                    TensorView::new(*d, shape, b).expect("valid view"),
                )
            })
            .collect();
        for (n, _) in &views {
            weight_map.insert(n.clone(), json!(file));
        }
        let bytes = safetensors::serialize(views, None).expect("serialize");
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    if shards > 1 {
        let index = json!({"metadata": {}, "weight_map": weight_map});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    }
    std::fs::write(dir.join("config.json"), config(opts).to_string()).unwrap();
    write_tokenizer(dir);
    tensors
}

pub fn config(opts: &Options) -> serde_json::Value {
    json!({
        "architectures": [opts.architecture],
        "model_type": "qwen3_5",
        "tie_word_embeddings": true,
        "bos_token_id": 999_999,
        "text_config": {
            "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "intermediate_size": opts.ff,
            "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
            "linear_conv_kernel_dim": KERNEL, "linear_num_key_heads": K_HEADS,
            "linear_num_value_heads": V_HEADS, "linear_key_head_dim": LIN_DIM,
            "linear_value_head_dim": LIN_DIM, "max_position_embeddings": 4096,
            "vocab_size": opts.rows, "rms_norm_eps": EPS, "mtp_num_hidden_layers": 1,
            "full_attention_interval": 4,
            "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            "rope_parameters": {"rope_theta": THETA, "partial_rotary_factor": 0.25,
                                 "mrope_section": [2, 1, 1], "mrope_interleaved": true},
            "eos_token_id": 0
        },
        "vision_config": {"depth": 1, "hidden_size": 16}
    })
}

pub const TEMPLATE: &str =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";

/// tokenizer.json (the synthetic byte-level vocabulary of `testmodel` in the shape of Qwen3.5's
/// tokenizer.json: `testmodel::vocab::tokenizer_json`) and tokenizer_config.json. Returns
/// nothing: ids are those of `vocab::synthetic()`.
pub fn write_tokenizer(dir: &Path) {
    let tokenizer = vocab::tokenizer_json(&vocab::synthetic());
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let config = json!({
        "add_prefix_space": false, "bos_token": null, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "unk_token": null, "model_max_length": 262144,
        "chat_template": TEMPLATE
    });
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
}
