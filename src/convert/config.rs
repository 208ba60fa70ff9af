//! config.json of a Qwen3.5 checkpoint: `text_config` merged into the root (its keys win, as in
//! the Python converter), checked, and turned into the `qwen35.*` GGUF metadata.
//!
//! Only the architectures whose tensors [`super::mapping`] knows are accepted; everything the
//! conversion relies on (head counts, head sizes, the attention/DeltaNet layer pattern) is
//! checked here, so that later steps can index without re-checking.

use super::{read_json, ConvertError, Mtp};
use crate::gguf::{GgufWriter, Value};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};

/// The Hugging Face architectures this converter handles.
pub const SUPPORTED_ARCHITECTURES: [&str; 2] =
    ["Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"];

/// The GGUF architecture written.
pub const GGUF_ARCH: &str = "qwen35";

/// The Gated DeltaNet (linear attention) sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearAttn {
    pub conv_kernel: u64,
    pub k_heads: u64,
    pub v_heads: u64,
    pub head_dim: u64,
}

impl LinearAttn {
    pub fn key_dim(&self) -> u64 {
        self.k_heads * self.head_dim
    }

    pub fn value_dim(&self) -> u64 {
        self.v_heads * self.head_dim
    }

    /// Channels of the causal convolution: q, k and v side by side.
    pub fn conv_dim(&self) -> u64 {
        2 * self.key_dim() + self.value_dim()
    }
}

/// The text model's hyperparameters, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub path: PathBuf,
    pub architecture: String,
    pub hidden: u64,
    pub n_layer: u64,
    pub n_ff: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    pub rope_dims: u64,
    pub rope_theta: f64,
    pub mrope_sections: [i32; 4],
    pub rms_eps: f64,
    pub context_length: u64,
    /// `vocab_size`: the embedding rows.
    pub vocab_size: u64,
    pub tied_embeddings: bool,
    pub full_attention_interval: u64,
    pub linear: LinearAttn,
    /// `mtp_num_hidden_layers` (0 when absent).
    pub mtp_layers: u64,
    /// The merged configuration, for keys read later (special token ids).
    pub merged: Map<String, Json>,
    /// The root object as written, before merging.
    pub root: Map<String, Json>,
}

impl ModelConfig {
    /// Read `dir/config.json`.
    pub fn load(dir: &Path) -> Result<Self, ConvertError> {
        let path = dir.join("config.json");
        let json = read_json(&path)?;
        Self::from_json(&path, json)
    }

    pub fn from_json(path: &Path, json: Json) -> Result<Self, ConvertError> {
        let bad = |what: String| ConvertError::Config {
            path: path.to_path_buf(),
            what,
        };
        let Json::Object(root) = json else {
            return Err(bad("the top level is not an object".into()));
        };
        let architecture = root
            .get("architectures")
            .and_then(Json::as_array)
            .and_then(|a| a.first())
            .and_then(Json::as_str)
            .ok_or_else(|| bad("no \"architectures\" list".into()))?
            .to_string();
        if !SUPPORTED_ARCHITECTURES.contains(&architecture.as_str()) {
            return Err(ConvertError::UnknownArchitecture {
                path: path.to_path_buf(),
                found: architecture,
                supported: SUPPORTED_ARCHITECTURES.join(", "),
            });
        }
        let mut merged = root.clone();
        if let Some(Json::Object(text)) = root.get("text_config") {
            for (k, v) in text {
                merged.insert(k.clone(), v.clone());
            }
        }
        let c = Fields { map: &merged, path };
        let rope = c
            .object("rope_parameters")
            .or_else(|| c.object("rope_scaling"));
        let in_rope = |key: &str| rope.and_then(|r| r.get(key));

        let hidden = c.u64("hidden_size")?;
        let n_head = c.u64("num_attention_heads")?;
        let head_dim = match c.opt_u64("head_dim")? {
            Some(d) => d,
            None => hidden / n_head.max(1),
        };
        let partial =
            match in_rope("partial_rotary_factor").or_else(|| c.get("partial_rotary_factor")) {
                Some(v) => v
                    .as_f64()
                    .ok_or_else(|| bad("partial_rotary_factor is not a number".into()))?,
                // The Python converter's default for this family.
                None => 0.25,
            };
        let rope_theta = in_rope("rope_theta")
            .or_else(|| c.get("rope_theta"))
            .and_then(|v| v.as_f64())
            .ok_or_else(|| bad("no rope_theta (in rope_parameters or at the top level)".into()))?;
        let mut mrope_sections: [i32; 4] = [11, 11, 10, 0];
        if let Some(s) = in_rope("mrope_section") {
            let items = s
                .as_array()
                .filter(|a| a.len() <= 4)
                .ok_or_else(|| bad("mrope_section is not a list of at most 4 numbers".into()))?;
            mrope_sections = [0; 4];
            for (slot, v) in mrope_sections.iter_mut().zip(items) {
                *slot = v
                    .as_i64()
                    .and_then(|x| i32::try_from(x).ok())
                    .ok_or_else(|| bad("mrope_section holds a non-integer".into()))?;
            }
        }
        let n_layer = c.u64("num_hidden_layers")?;
        let linear = LinearAttn {
            conv_kernel: c.u64("linear_conv_kernel_dim")?,
            k_heads: c.u64("linear_num_key_heads")?,
            v_heads: c.u64("linear_num_value_heads")?,
            head_dim: c.u64("linear_key_head_dim")?,
        };
        let v_head_dim = c.u64("linear_value_head_dim")?;
        if v_head_dim != linear.head_dim {
            return Err(bad(format!(
                "linear_key_head_dim {} differs from linear_value_head_dim {v_head_dim}; llama.cpp's qwen35 needs them equal",
                linear.head_dim
            )));
        }
        if linear.k_heads == 0 || !linear.v_heads.is_multiple_of(linear.k_heads) {
            return Err(bad(format!(
                "linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                linear.v_heads, linear.k_heads
            )));
        }
        let n_head_kv = c.u64("num_key_value_heads")?;
        if n_head_kv == 0 || !n_head.is_multiple_of(n_head_kv) {
            return Err(bad(format!(
                "num_attention_heads {n_head} is not a multiple of num_key_value_heads {n_head_kv}"
            )));
        }
        let full_attention_interval = attention_interval(&c, n_layer)?;
        let cfg = Self {
            path: path.to_path_buf(),
            architecture,
            hidden,
            n_layer,
            n_ff: c.u64("intermediate_size")?,
            n_head,
            n_head_kv,
            head_dim,
            rope_dims: (head_dim as f64 * partial).round() as u64,
            rope_theta,
            mrope_sections,
            rms_eps: c.get("rms_norm_eps").and_then(Json::as_f64).unwrap_or(1e-6),
            context_length: c.u64("max_position_embeddings")?,
            vocab_size: c.u64("vocab_size")?,
            tied_embeddings: c
                .get("tie_word_embeddings")
                .and_then(Json::as_bool)
                .unwrap_or(false),
            full_attention_interval,
            linear,
            mtp_layers: c.opt_u64("mtp_num_hidden_layers")?.unwrap_or(0),
            merged: merged.clone(),
            root,
        };
        Ok(cfg)
    }

    /// Whether layer `il` (of the main stack) is a full-attention layer.
    pub fn is_attention(&self, il: u64) -> bool {
        (il + 1).is_multiple_of(self.full_attention_interval)
    }

    /// Blocks written: the main layers, plus the MTP block when kept.
    pub fn block_count(&self, mtp: Mtp) -> u64 {
        match mtp {
            Mtp::Keep => self.n_layer + self.mtp_layers,
            Mtp::Drop => self.n_layer,
        }
    }

    /// Set the `general.*` (but file type) and `qwen35.*` keys.
    pub fn write_metadata(&self, w: &mut GgufWriter, name: &str, mtp: Mtp) {
        let k = |s: &str| format!("{GGUF_ARCH}.{s}");
        let u = |v: u64| Value::U32(v as u32);
        w.set("general.architecture", Value::String(GGUF_ARCH.into()))
            .set("general.name", Value::String(name.into()))
            .set(k("block_count"), u(self.block_count(mtp)))
            .set(k("context_length"), u(self.context_length))
            .set(k("embedding_length"), u(self.hidden))
            .set(k("feed_forward_length"), u(self.n_ff))
            .set(k("attention.head_count"), u(self.n_head))
            .set(k("attention.head_count_kv"), u(self.n_head_kv))
            .set(k("attention.key_length"), u(self.head_dim))
            .set(k("attention.value_length"), u(self.head_dim))
            .set(
                k("attention.layer_norm_rms_epsilon"),
                Value::F32(self.rms_eps as f32),
            )
            .set(k("rope.freq_base"), Value::F32(self.rope_theta as f32))
            .set(k("rope.dimension_count"), u(self.rope_dims))
            .set(
                k("rope.dimension_sections"),
                Value::i32s(self.mrope_sections),
            )
            .set(k("ssm.conv_kernel"), u(self.linear.conv_kernel))
            .set(k("ssm.state_size"), u(self.linear.head_dim))
            .set(k("ssm.group_count"), u(self.linear.k_heads))
            .set(k("ssm.time_step_rank"), u(self.linear.v_heads))
            .set(k("ssm.inner_size"), u(self.linear.value_dim()))
            .set(
                k("full_attention_interval"),
                u(self.full_attention_interval),
            );
        if mtp == Mtp::Keep && self.mtp_layers > 0 {
            w.set(k("nextn_predict_layers"), u(self.mtp_layers));
        }
    }
}

/// The attention layer period: `full_attention_interval`, checked against `layer_types` when
/// both are given, derived from `layer_types` alone otherwise, 4 when neither is.
fn attention_interval(c: &Fields<'_>, n_layer: u64) -> Result<u64, ConvertError> {
    let bad = |what: String| ConvertError::Config {
        path: c.path.to_path_buf(),
        what,
    };
    let types: Option<Vec<&str>> = match c.get("layer_types") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_array()
                .and_then(|a| a.iter().map(Json::as_str).collect())
                .ok_or_else(|| bad("layer_types is not a list of strings".into()))?,
        ),
    };
    let interval = match (c.opt_u64("full_attention_interval")?, &types) {
        (Some(i), _) => i,
        (None, Some(t)) => t
            .iter()
            .position(|s| *s == "full_attention")
            .map(|p| p as u64 + 1)
            .ok_or_else(|| bad("layer_types has no full_attention layer".into()))?,
        (None, None) => 4,
    };
    if interval == 0 {
        return Err(bad("full_attention_interval is 0".into()));
    }
    if let Some(t) = types {
        if t.len() as u64 != n_layer {
            return Err(bad(format!(
                "layer_types lists {} layers, num_hidden_layers is {n_layer}",
                t.len()
            )));
        }
        for (i, kind) in t.iter().enumerate() {
            let want = if (i as u64 + 1).is_multiple_of(interval) {
                "full_attention"
            } else {
                "linear_attention"
            };
            if *kind != want {
                return Err(bad(format!(
                    "layer_types[{i}] is {kind:?}; qwen35 in llama.cpp needs every {interval}th layer full_attention and the others linear_attention"
                )));
            }
        }
    }
    Ok(interval)
}

/// Typed access to the merged configuration, with errors naming the file and key.
struct Fields<'a> {
    map: &'a Map<String, Json>,
    path: &'a Path,
}

impl Fields<'_> {
    fn get(&self, key: &str) -> Option<&Json> {
        self.map.get(key)
    }

    fn object(&self, key: &str) -> Option<&Map<String, Json>> {
        self.map.get(key).and_then(Json::as_object)
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, ConvertError> {
        match self.map.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| ConvertError::Config {
                path: self.path.to_path_buf(),
                what: format!("{key} is not a non-negative integer: {v}"),
            }),
        }
    }

    fn u64(&self, key: &str) -> Result<u64, ConvertError> {
        self.opt_u64(key)?.ok_or_else(|| ConvertError::Config {
            path: self.path.to_path_buf(),
            what: format!("{key} is missing"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tiny() -> Json {
        json!({
            "architectures": ["Qwen3_5ForConditionalGeneration"],
            "tie_word_embeddings": true,
            "text_config": {
                "hidden_size": 64, "num_hidden_layers": 4, "intermediate_size": 192,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                "linear_conv_kernel_dim": 4, "linear_num_key_heads": 2,
                "linear_num_value_heads": 4, "linear_key_head_dim": 16,
                "linear_value_head_dim": 16, "max_position_embeddings": 4096,
                "vocab_size": 320, "rms_norm_eps": 1e-6, "mtp_num_hidden_layers": 1,
                "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
                                     "mrope_section": [2, 1, 1]}
            }
        })
    }

    #[test]
    fn merges_text_config_and_derives_sizes() {
        let c = ModelConfig::from_json(Path::new("config.json"), tiny()).unwrap();
        assert_eq!(c.hidden, 64);
        assert_eq!(c.full_attention_interval, 4);
        assert_eq!(c.rope_dims, 8);
        assert_eq!(c.mrope_sections, [2, 1, 1, 0]);
        assert_eq!(c.linear.conv_dim(), 2 * 32 + 64);
        assert!(c.tied_embeddings);
        assert!(c.is_attention(3) && !c.is_attention(2));
        assert_eq!(c.block_count(Mtp::Keep), 5);
        assert_eq!(c.block_count(Mtp::Drop), 4);
    }

    #[test]
    fn refuses_what_llama_cpp_cannot_run() {
        let mut j = tiny();
        j["architectures"] = json!(["LlamaForCausalLM"]);
        let e = ModelConfig::from_json(Path::new("c.json"), j).unwrap_err();
        assert!(matches!(e, ConvertError::UnknownArchitecture { .. }), "{e}");
        let mut j = tiny();
        j["text_config"]["layer_types"][2] = json!("full_attention");
        let e = ModelConfig::from_json(Path::new("c.json"), j).unwrap_err();
        assert!(e.to_string().contains("layer_types[3]"), "{e}");
        let mut j = tiny();
        j["text_config"]["linear_num_value_heads"] = json!(3);
        assert!(ModelConfig::from_json(Path::new("c.json"), j).is_err());
        let mut j = tiny();
        j["text_config"]
            .as_object_mut()
            .unwrap()
            .remove("hidden_size");
        let e = ModelConfig::from_json(Path::new("c.json"), j).unwrap_err();
        assert!(e.to_string().contains("hidden_size is missing"), "{e}");
    }
}
