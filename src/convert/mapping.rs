//! Which checkpoint tensor becomes which GGUF tensor: the expected set is derived from the
//! configuration (so a missing, unknown or wrongly shaped tensor is caught before anything is
//! written), each entry with its GGUF name, expected Hugging Face shape, output type and
//! [`Transform`].
//!
//! Hugging Face names come as `model.language_model.*` (the multimodal class) or `model.*` (the
//! text-only class); both are accepted. The vision tower (`model.visual.*`) is dropped, and so is
//! `lm_head.weight` when the embeddings are tied, and the MTP block (`mtp.*`) under `--no-mtp`.

use super::checkpoint::Checkpoint;
use super::config::ModelConfig;
use super::transform::{output_type, tile_after, tile_v_heads, ElementOp, Transform};
use super::{ConvertError, Mtp, OutType};
use crate::gguf::GgmlType;
use std::collections::BTreeMap;

/// One tensor to write.
#[derive(Debug, Clone)]
pub struct TensorPlan {
    /// The name in the checkpoint.
    pub source: String,
    pub gguf_name: String,
    /// Dimensions in ggml order (reversed Hugging Face order, conv kernel squeezed).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    pub transform: Transform,
}

/// The whole plan: what is written, and what was left out (with why).
#[derive(Debug, Clone)]
pub struct Plan {
    pub tensors: Vec<TensorPlan>,
    pub dropped: Vec<(String, &'static str)>,
}

/// An expected tensor, before the checkpoint is consulted.
struct Expected {
    /// Canonical Hugging Face name (`model.layers.0...`, `mtp...`).
    hf: String,
    gguf: String,
    /// Hugging Face shape as stored.
    shape: Vec<u64>,
    /// The transform (its rows and cols define the ggml dims).
    transform: Transform,
}

fn expect(hf: String, gguf: String, shape: &[u64], transform: Transform) -> Expected {
    Expected {
        hf,
        gguf,
        shape: shape.to_vec(),
        transform,
    }
}

fn matrix(hf: String, gguf: String, rows: u64, cols: u64) -> Expected {
    expect(hf, gguf, &[rows, cols], Transform::identity(rows, cols))
}

fn vector(hf: String, gguf: String, n: u64, op: ElementOp) -> Expected {
    let transform = Transform {
        op,
        ..Transform::identity(n, 1)
    };
    expect(hf, gguf, &[n], transform)
}

/// The tensors of a full-attention block (main stack or MTP), HF prefix `p`, GGUF prefix `b`.
fn attention_block(c: &ModelConfig, p: &str, b: &str, out: &mut Vec<Expected>) {
    let (h, hd) = (c.hidden, c.head_dim);
    let q = c.n_head * hd;
    let kv = c.n_head_kv * hd;
    // q_proj yields, per head, the query then the output gate: llama.cpp views it the same way.
    out.push(matrix(
        format!("{p}self_attn.q_proj.weight"),
        format!("{b}attn_q.weight"),
        2 * q,
        h,
    ));
    out.push(matrix(
        format!("{p}self_attn.k_proj.weight"),
        format!("{b}attn_k.weight"),
        kv,
        h,
    ));
    out.push(matrix(
        format!("{p}self_attn.v_proj.weight"),
        format!("{b}attn_v.weight"),
        kv,
        h,
    ));
    out.push(matrix(
        format!("{p}self_attn.o_proj.weight"),
        format!("{b}attn_output.weight"),
        h,
        q,
    ));
    let plus = ElementOp::PlusOne;
    out.push(vector(
        format!("{p}self_attn.q_norm.weight"),
        format!("{b}attn_q_norm.weight"),
        hd,
        plus,
    ));
    out.push(vector(
        format!("{p}self_attn.k_norm.weight"),
        format!("{b}attn_k_norm.weight"),
        hd,
        plus,
    ));
}

/// The tensors of a Gated DeltaNet block.
fn deltanet_block(c: &ModelConfig, p: &str, b: &str, out: &mut Vec<Expected>) {
    let l = &c.linear;
    let (h, hd) = (c.hidden, l.head_dim);
    let (kh, vh) = (l.k_heads, l.v_heads);
    let qk = 2 * l.key_dim();
    let conv = l.conv_dim();
    let rows = |rows: u64, cols: u64, src: Vec<u32>| Transform {
        row_src: Some(src),
        ..Transform::identity(rows, cols)
    };
    let la = |s: &str| format!("{p}linear_attn.{s}");
    out.push(expect(
        la("in_proj_qkv.weight"),
        format!("{b}attn_qkv.weight"),
        &[conv, h],
        rows(conv, h, tile_after(qk, kh, vh, hd)),
    ));
    out.push(expect(
        la("in_proj_z.weight"),
        format!("{b}attn_gate.weight"),
        &[l.value_dim(), h],
        rows(l.value_dim(), h, tile_v_heads(kh, vh, hd)),
    ));
    out.push(expect(
        la("in_proj_b.weight"),
        format!("{b}ssm_beta.weight"),
        &[vh, h],
        rows(vh, h, tile_v_heads(kh, vh, 1)),
    ));
    out.push(expect(
        la("in_proj_a.weight"),
        format!("{b}ssm_alpha.weight"),
        &[vh, h],
        rows(vh, h, tile_v_heads(kh, vh, 1)),
    ));
    // [channels, 1, kernel] squeezed to [channels, kernel]: ggml [kernel, channels].
    out.push(expect(
        la("conv1d.weight"),
        format!("{b}ssm_conv1d.weight"),
        &[conv, 1, l.conv_kernel],
        rows(conv, l.conv_kernel, tile_after(qk, kh, vh, hd)),
    ));
    out.push(expect(
        la("dt_bias"),
        format!("{b}ssm_dt.bias"),
        &[vh],
        rows(vh, 1, tile_v_heads(kh, vh, 1)),
    ));
    out.push(expect(
        la("A_log"),
        format!("{b}ssm_a"),
        &[vh],
        Transform {
            op: ElementOp::NegExp,
            ..rows(vh, 1, tile_v_heads(kh, vh, 1))
        },
    ));
    // The gated norm multiplies by w itself: no +1 here.
    out.push(vector(
        la("norm.weight"),
        format!("{b}ssm_norm.weight"),
        hd,
        ElementOp::Identity,
    ));
    out.push(expect(
        la("out_proj.weight"),
        format!("{b}ssm_out.weight"),
        &[h, l.value_dim()],
        Transform {
            col_src: Some(tile_v_heads(kh, vh, hd)),
            ..Transform::identity(h, l.value_dim())
        },
    ));
}

/// Norms and MLP, common to every block.
fn common_block(c: &ModelConfig, p: &str, b: &str, out: &mut Vec<Expected>) {
    let (h, ff) = (c.hidden, c.n_ff);
    let plus = ElementOp::PlusOne;
    out.push(vector(
        format!("{p}input_layernorm.weight"),
        format!("{b}attn_norm.weight"),
        h,
        plus,
    ));
    out.push(vector(
        format!("{p}post_attention_layernorm.weight"),
        format!("{b}post_attention_norm.weight"),
        h,
        plus,
    ));
    out.push(matrix(
        format!("{p}mlp.gate_proj.weight"),
        format!("{b}ffn_gate.weight"),
        ff,
        h,
    ));
    out.push(matrix(
        format!("{p}mlp.up_proj.weight"),
        format!("{b}ffn_up.weight"),
        ff,
        h,
    ));
    out.push(matrix(
        format!("{p}mlp.down_proj.weight"),
        format!("{b}ffn_down.weight"),
        h,
        ff,
    ));
}

fn expected(c: &ModelConfig, mtp: Mtp) -> Result<Vec<Expected>, ConvertError> {
    let (h, v) = (c.hidden, c.vocab_size);
    let mut out = vec![matrix(
        "model.embed_tokens.weight".into(),
        "token_embd.weight".into(),
        v,
        h,
    )];
    for il in 0..c.n_layer {
        let (p, b) = (format!("model.layers.{il}."), format!("blk.{il}."));
        common_block(c, &p, &b, &mut out);
        if c.is_attention(il) {
            attention_block(c, &p, &b, &mut out);
        } else {
            deltanet_block(c, &p, &b, &mut out);
        }
    }
    if mtp == Mtp::Keep && c.mtp_layers > 0 {
        if c.mtp_layers != 1 {
            return Err(ConvertError::Config {
                path: c.path.clone(),
                what: format!(
                    "mtp_num_hidden_layers is {}; llama.cpp's qwen35 supports one MTP block (convert with --no-mtp)",
                    c.mtp_layers
                ),
            });
        }
        let bid = c.n_layer;
        let b = format!("blk.{bid}.");
        common_block(c, "mtp.layers.0.", &b, &mut out);
        attention_block(c, "mtp.layers.0.", &b, &mut out);
        out.push(matrix(
            "mtp.fc.weight".into(),
            format!("{b}nextn.eh_proj.weight"),
            h,
            2 * h,
        ));
        let plus = ElementOp::PlusOne;
        for (hf, gguf) in [
            ("mtp.pre_fc_norm_embedding.weight", "nextn.enorm.weight"),
            ("mtp.pre_fc_norm_hidden.weight", "nextn.hnorm.weight"),
            ("mtp.norm.weight", "nextn.shared_head_norm.weight"),
        ] {
            out.push(vector(hf.into(), format!("{b}{gguf}"), h, plus));
        }
    }
    out.push(vector(
        "model.norm.weight".into(),
        "output_norm.weight".into(),
        h,
        ElementOp::PlusOne,
    ));
    if !c.tied_embeddings {
        out.push(matrix(
            "lm_head.weight".into(),
            "output.weight".into(),
            v,
            h,
        ));
    }
    Ok(out)
}

/// The name the mapping uses for a checkpoint tensor (`language_model.` removed).
pub fn canonical(name: &str) -> String {
    name.replacen("model.language_model.", "model.", 1)
}

fn drop_reason(canonical: &str, c: &ModelConfig, mtp: Mtp) -> Option<&'static str> {
    if canonical.starts_with("model.visual.") || canonical.starts_with("visual.") {
        Some("vision tower (the model is used for text only)")
    } else if canonical.starts_with("mtp.") && (mtp == Mtp::Drop || c.mtp_layers == 0) {
        Some("MTP block not kept")
    } else if canonical == "lm_head.weight" && c.tied_embeddings {
        Some("tied to the token embeddings")
    } else {
        None
    }
}

/// Check the checkpoint against the configuration and plan every tensor.
pub fn plan(
    c: &ModelConfig,
    ckpt: &Checkpoint,
    out_type: OutType,
    mtp: Mtp,
) -> Result<Plan, ConvertError> {
    let mut by_canonical: BTreeMap<String, &str> = BTreeMap::new();
    let mut dropped = Vec::new();
    for t in ckpt.tensors() {
        let canon = canonical(&t.name);
        if let Some(why) = drop_reason(&canon, c, mtp) {
            dropped.push((t.name.clone(), why));
        } else {
            by_canonical.insert(canon, &t.name);
        }
    }
    if mtp == Mtp::Keep && c.mtp_layers > 0 && !ckpt.tensors().any(|t| t.name.starts_with("mtp.")) {
        return Err(ConvertError::Config {
            path: c.path.clone(),
            what: format!(
                "mtp_num_hidden_layers is {} but the checkpoint has no mtp.* tensors (convert with --no-mtp)",
                c.mtp_layers
            ),
        });
    }
    let wanted = expected(c, mtp)?;
    let mut tensors = Vec::with_capacity(wanted.len());
    for e in wanted {
        let Some(source) = by_canonical.remove(&e.hf) else {
            return Err(ConvertError::MissingTensor { name: e.hf });
        };
        let t = ckpt
            .get(source)
            .ok_or_else(|| ConvertError::MissingTensor { name: e.hf.clone() })?;
        if t.shape != e.shape {
            return Err(ConvertError::Shape {
                name: source.to_string(),
                found: t.shape.clone(),
                expected: e.shape,
            });
        }
        if t.ty.is_none() {
            return Err(ConvertError::Tensor {
                name: source.to_string(),
                what: format!("stored as {}; only BF16, F16 and F32 are read", t.type_name),
            });
        }
        let dims = if e.shape.len() == 1 {
            vec![e.transform.rows]
        } else {
            vec![e.transform.cols, e.transform.rows]
        };
        let ty = output_type(&e.gguf, dims.len(), dims[0], out_type);
        tensors.push(TensorPlan {
            source: source.to_string(),
            gguf_name: e.gguf,
            dims,
            ty,
            transform: e.transform,
        });
    }
    if let Some((_, name)) = by_canonical.into_iter().next() {
        return Err(ConvertError::UnknownTensor {
            name: name.to_string(),
        });
    }
    Ok(Plan { tensors, dropped })
}
