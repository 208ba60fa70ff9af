//! The tokenizer: tokenizer.json (byte-level BPE: vocabulary, merges, added tokens),
//! tokenizer_config.json (special tokens, `add_bos_token`, chat template) and, when present,
//! chat_template.jinja, turned into the GGUF `gpt2` tokenizer keys with pre-tokenizer `qwen35`.
//!
//! The table is indexed by id and padded to the embedding rows with `[PAD{i}]` (type unused);
//! added tokens are CONTROL when flagged special or shaped `<|...|>`, USER_DEFINED otherwise (so
//! `<think>` and `<tool_call>` stay visible when detokenised); everything else is NORMAL. The
//! files are read as plain JSON: the `tokenizers` crate does not expose merges, and the fields
//! needed here are few and stable.

use super::{read_json, ConvertError};
use crate::gguf::{GgufWriter, Value};
use crate::gguf::{TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNUSED, TOKEN_USER_DEFINED};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::path::Path;

/// The GGUF tokenizer of a converted model.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufVocab {
    pub tokens: Vec<String>,
    pub types: Vec<i32>,
    pub merges: Vec<String>,
    /// (GGUF key suffix, token id): `eos` -> `tokenizer.ggml.eos_token_id`...
    pub special_ids: Vec<(&'static str, u32)>,
    pub add_bos: bool,
    pub add_eos: Option<bool>,
    pub chat_template: Option<String>,
    /// Tokens the tokenizer defines (the rest is padding).
    pub defined: usize,
}

/// Special token kinds: the tokenizer_config.json name, the config.json id key, the GGUF key.
const SPECIALS: [(&str, &str, &str); 7] = [
    ("bos_token", "bos_token_id", "bos_token_id"),
    ("eos_token", "eos_token_id", "eos_token_id"),
    ("unk_token", "unk_token_id", "unknown_token_id"),
    ("sep_token", "sep_token_id", "seperator_token_id"),
    ("pad_token", "pad_token_id", "padding_token_id"),
    ("cls_token", "cls_token_id", "cls_token_id"),
    ("mask_token", "mask_token_id", "mask_token_id"),
];

fn looks_special(token: &str) -> bool {
    token.starts_with("<|") && token.ends_with("|>")
}

/// Why a token cannot take its id.
#[derive(Debug, thiserror::Error)]
enum Placement {
    #[error("token {token:?} has id {id}, past the {rows} embedding rows")]
    PastTable { token: String, id: u64, rows: usize },
    #[error("id {id} is given to both {first:?} and {second:?}")]
    Taken {
        id: u64,
        first: String,
        second: String,
    },
}

/// Put `token` at `id`, refusing ids past the table and two tokens on one id.
fn place(
    by_id: &mut [Option<(String, i32)>],
    id: u64,
    token: &str,
    ty: i32,
) -> Result<(), Placement> {
    let rows = by_id.len();
    let slot = by_id
        .get_mut(id as usize)
        .ok_or_else(|| Placement::PastTable {
            token: token.to_string(),
            id,
            rows,
        })?;
    match slot {
        Some((prev, _)) if prev != token => Err(Placement::Taken {
            id,
            first: prev.clone(),
            second: token.to_string(),
        }),
        _ => {
            *slot = Some((token.to_string(), ty));
            Ok(())
        }
    }
}

/// Read the tokenizer files of `dir`, padding the table to `rows` (the embedding rows).
/// `config_root` and `config_merged` are config.json before and after merging `text_config`,
/// the fall-back source of special token ids.
pub fn load(
    dir: &Path,
    rows: u64,
    config_root: &Map<String, Json>,
    config_merged: &Map<String, Json>,
) -> Result<GgufVocab, ConvertError> {
    let path = dir.join("tokenizer.json");
    let json = read_json(&path)?;
    let bad = |what: String| ConvertError::Tokenizer {
        path: path.clone(),
        what,
    };
    let model = json
        .get("model")
        .ok_or_else(|| bad("no \"model\"".into()))?;
    let kind = model.get("type").and_then(Json::as_str).unwrap_or("");
    if kind != "BPE" {
        return Err(bad(format!(
            "model type {kind:?}; only byte-level BPE is supported"
        )));
    }
    let rows = rows as usize;
    let mut by_id: Vec<Option<(String, i32)>> = vec![None; rows];
    let vocab = model
        .get("vocab")
        .and_then(Json::as_object)
        .ok_or_else(|| bad("model.vocab is not an object".into()))?;
    for (token, id) in vocab {
        let id = id
            .as_u64()
            .ok_or_else(|| bad(format!("token {token:?} has no integer id")))?;
        place(&mut by_id, id, token, TOKEN_NORMAL).map_err(|e| bad(e.to_string()))?;
    }
    let added = json.get("added_tokens").and_then(Json::as_array);
    for entry in added.into_iter().flatten() {
        let content = entry.get("content").and_then(Json::as_str);
        let id = entry.get("id").and_then(Json::as_u64);
        let (Some(content), Some(id)) = (content, id) else {
            return Err(bad(format!("added token without content or id: {entry}")));
        };
        let special = entry
            .get("special")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        let ty = if special || looks_special(content) {
            TOKEN_CONTROL
        } else {
            TOKEN_USER_DEFINED
        };
        // An added token may repeat a vocabulary entry; the added flags win.
        if let Some(Some((prev, _))) = by_id.get(id as usize) {
            if prev == content {
                by_id[id as usize] = None;
            }
        }
        place(&mut by_id, id, content, ty).map_err(|e| bad(e.to_string()))?;
    }
    let merges = model
        .get("merges")
        .and_then(Json::as_array)
        .ok_or_else(|| bad("model.merges is not a list".into()))?
        .iter()
        .map(|m| match m {
            Json::String(s) => Some(s.clone()),
            Json::Array(pair) => match pair.as_slice() {
                [Json::String(a), Json::String(b)] => Some(format!("{a} {b}")),
                _ => None,
            },
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("a merge is neither \"a b\" nor [\"a\", \"b\"]".into()))?;
    let defined = by_id.iter().filter(|s| s.is_some()).count();
    let (tokens, types): (Vec<String>, Vec<i32>) = by_id
        .into_iter()
        .enumerate()
        .map(|(i, slot)| slot.unwrap_or_else(|| (format!("[PAD{i}]"), TOKEN_UNUSED)))
        .unzip();

    let config_path = dir.join("tokenizer_config.json");
    let tok_config = if config_path.is_file() {
        match read_json(&config_path)? {
            Json::Object(m) => m,
            _ => Map::new(),
        }
    } else {
        Map::new()
    };
    let id_of: HashMap<&str, u32> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i as u32))
        .collect();
    let mut special_ids = Vec::new();
    for (tok_key, id_key, gguf_key) in SPECIALS {
        let named = tok_config.get(tok_key).and_then(|v| match v {
            Json::String(s) => Some(s.as_str()),
            Json::Object(o) => o.get("content").and_then(Json::as_str),
            _ => None,
        });
        let id = match named {
            Some(text) => Some(*id_of.get(text).ok_or_else(|| ConvertError::Tokenizer {
                path: config_path.clone(),
                what: format!("{tok_key} {text:?} is not in the vocabulary"),
            })?),
            None => [config_root, config_merged]
                .iter()
                .find_map(|m| m.get(id_key).and_then(Json::as_u64))
                .filter(|&id| (id as usize) < tokens.len())
                .map(|id| id as u32),
        };
        if let Some(id) = id {
            special_ids.push((gguf_key, id));
        }
    }
    let template_file = dir.join("chat_template.jinja");
    let chat_template = if template_file.is_file() {
        Some(
            std::fs::read_to_string(&template_file)
                .map_err(|e| ConvertError::io(&template_file, e))?,
        )
    } else {
        match tok_config.get("chat_template") {
            Some(Json::String(s)) => Some(s.clone()),
            // A list of named templates: the default one.
            Some(Json::Array(list)) => list
                .iter()
                .find(|t| t.get("name").and_then(Json::as_str) == Some("default"))
                .and_then(|t| t.get("template").and_then(Json::as_str))
                .map(str::to_string),
            _ => None,
        }
    };
    Ok(GgufVocab {
        tokens,
        types,
        merges,
        special_ids,
        add_bos: tok_config
            .get("add_bos_token")
            .and_then(Json::as_bool)
            .unwrap_or(false),
        add_eos: tok_config.get("add_eos_token").and_then(Json::as_bool),
        chat_template,
        defined,
    })
}

impl GgufVocab {
    /// Set the `tokenizer.*` keys.
    pub fn write(&self, w: &mut GgufWriter) {
        w.set("tokenizer.ggml.model", Value::String("gpt2".into()))
            .set("tokenizer.ggml.pre", Value::String("qwen35".into()))
            .set(
                "tokenizer.ggml.tokens",
                Value::strings(self.tokens.iter().cloned()),
            )
            .set(
                "tokenizer.ggml.token_type",
                Value::i32s(self.types.iter().copied()),
            )
            .set(
                "tokenizer.ggml.merges",
                Value::strings(self.merges.iter().cloned()),
            )
            .set("tokenizer.ggml.add_bos_token", Value::Bool(self.add_bos));
        if let Some(add_eos) = self.add_eos {
            w.set("tokenizer.ggml.add_eos_token", Value::Bool(add_eos));
        }
        for (key, id) in &self.special_ids {
            w.set(format!("tokenizer.ggml.{key}"), Value::U32(*id));
        }
        if let Some(t) = &self.chat_template {
            w.set("tokenizer.chat_template", Value::String(t.clone()));
        }
    }

    pub fn id_of(&self, token: &str) -> Option<u32> {
        self.tokens
            .iter()
            .position(|t| t == token)
            .map(|i| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, tokenizer: Json, config: Json) {
        std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
        std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    }

    #[test]
    fn types_padding_specials_and_template() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            json!({
                "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                          "merges": [["a", "b"]]},
                "added_tokens": [
                    {"id": 3, "content": "<|endoftext|>", "special": true},
                    {"id": 4, "content": "<|im_end|>", "special": true},
                    {"id": 6, "content": "<think>", "special": false}
                ]
            }),
            json!({"eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"},
                   "bos_token": null, "chat_template": "{{ messages }}"}),
        );
        let root = json!({"bos_token_id": 3}).as_object().unwrap().clone();
        let v = load(dir.path(), 8, &root, &Map::new()).unwrap();
        assert_eq!(
            v.tokens,
            [
                "a",
                "b",
                "ab",
                "<|endoftext|>",
                "<|im_end|>",
                "[PAD5]",
                "<think>",
                "[PAD7]"
            ]
        );
        assert_eq!(
            v.types,
            [
                1,
                1,
                1,
                TOKEN_CONTROL,
                TOKEN_CONTROL,
                TOKEN_UNUSED,
                TOKEN_USER_DEFINED,
                TOKEN_UNUSED
            ]
        );
        assert_eq!(v.merges, ["a b"]);
        assert_eq!(v.defined, 6);
        let ids: HashMap<_, _> = v.special_ids.iter().copied().collect();
        assert_eq!(ids["eos_token_id"], 4);
        assert_eq!(ids["padding_token_id"], 3);
        assert_eq!(
            ids["bos_token_id"], 3,
            "from config.json when the tokenizer names none"
        );
        assert_eq!(v.chat_template.as_deref(), Some("{{ messages }}"));
        assert!(!v.add_bos);
        // Too few rows for the ids is an error naming the token.
        let e = load(dir.path(), 5, &root, &Map::new()).unwrap_err();
        assert!(e.to_string().contains("<think>"), "{e}");
    }
}
