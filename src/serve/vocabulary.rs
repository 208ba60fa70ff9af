//! The engine's vocabulary as `lilypad serve` shows tokens to clients: each id's bytes
//! (special tokens written out), fetched from the engine once, when a request first needs
//! them, and kept flat (one byte buffer and the end of each piece: about 2.5 MB for the real
//! model's 248,320 tokens). Also the JSON of rated tokens in OpenAI's chat form
//! (`logprobs.content[]`: `token`, `logprob`, `bytes`, `top_logprobs`) and its legacy
//! completions form (`tokens`, `token_logprobs`, `top_logprobs`, `text_offset`).
//!
//! Does not own: rating tokens (`crate::engine::logprob`), or which answer carries them
//! (`super::chat`, `super::completions`).

use crate::engine::{Engine, EngineError, SampledToken};
use serde_json::{json, Map, Value};

/// Every token's bytes.
pub struct Vocabulary {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl Vocabulary {
    /// The vocabulary of `engine`; `None` for engines that do not tokenise here (a remote
    /// server, the scripted engine).
    pub fn of(engine: &dyn Engine) -> Result<Option<Self>, EngineError> {
        let Some(n) = engine.vocabulary() else {
            return Ok(None);
        };
        let ids: Vec<u32> = (0..n).collect();
        let Some(pieces) = engine.token_bytes(&ids)? else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
        let mut ends = Vec::with_capacity(pieces.len());
        for p in pieces {
            bytes.extend_from_slice(&p);
            ends.push(bytes.len() as u32);
        }
        Ok(Some(Self { bytes, ends }))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The bytes of token `id` (empty for an id outside the vocabulary).
    pub fn piece(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let Some(&end) = self.ends.get(i) else {
            return &[];
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start as usize..end as usize]
    }

    /// The text of `ids`: their bytes joined (special tokens written out), invalid UTF-8
    /// replaced.
    pub fn text(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&t| self.piece(t).to_vec()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn token_json(&self, id: u32, logprob: f32) -> Map<String, Value> {
        let bytes = self.piece(id);
        let mut m = Map::new();
        m.insert("token".into(), json!(String::from_utf8_lossy(bytes)));
        m.insert("logprob".into(), json!(logprob));
        m.insert("bytes".into(), json!(bytes));
        m
    }

    /// `logprobs` of a chat choice or chunk: `{"content": [...], "refusal": null}`.
    pub fn chat_logprobs(&self, sampled: &[SampledToken]) -> Value {
        let content: Vec<Value> = sampled
            .iter()
            .map(|t| {
                let mut m = self.token_json(t.id, t.logprob);
                let top: Vec<Value> = t
                    .top
                    .iter()
                    .map(|&(id, lp)| Value::Object(self.token_json(id, lp)))
                    .collect();
                m.insert("top_logprobs".into(), Value::Array(top));
                Value::Object(m)
            })
            .collect();
        json!({"content": content, "refusal": null})
    }

    /// `logprobs` of a legacy completion choice; `offset` is where the generated text starts
    /// in the text the offsets count (0: the completion's own text).
    pub fn completion_logprobs(&self, sampled: &[SampledToken], offset: usize) -> Value {
        let mut at = offset;
        let mut tokens = Vec::new();
        let mut logprobs = Vec::new();
        let mut tops = Vec::new();
        let mut offsets = Vec::new();
        for t in sampled {
            let piece = String::from_utf8_lossy(self.piece(t.id)).into_owned();
            offsets.push(at);
            at += piece.len();
            tokens.push(piece);
            logprobs.push(t.logprob);
            let top: Map<String, Value> = t
                .top
                .iter()
                .map(|&(id, lp)| {
                    (
                        String::from_utf8_lossy(self.piece(id)).into_owned(),
                        json!(lp),
                    )
                })
                .collect();
            tops.push(Value::Object(top));
        }
        json!({
            "tokens": tokens,
            "token_logprobs": logprobs,
            "top_logprobs": tops,
            "text_offset": offsets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(pieces: &[&str]) -> Vocabulary {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for p in pieces {
            bytes.extend_from_slice(p.as_bytes());
            ends.push(bytes.len() as u32);
        }
        Vocabulary { bytes, ends }
    }

    #[test]
    fn pieces_text_and_the_chat_shape() {
        let v = vocab(&["a", "bc", "<|im_end|>"]);
        assert_eq!(v.piece(1), b"bc");
        assert_eq!(v.piece(0), b"a");
        assert!(v.piece(9).is_empty());
        assert_eq!(v.text(&[1, 0, 2]), "bca<|im_end|>");
        let t = SampledToken {
            id: 1,
            logprob: -0.5,
            top: vec![(1, -0.5), (0, -1.5)],
        };
        let j = v.chat_logprobs(std::slice::from_ref(&t));
        assert_eq!(j["content"][0]["token"], "bc");
        assert_eq!(j["content"][0]["bytes"], json!([98, 99]));
        assert_eq!(j["content"][0]["top_logprobs"][1]["token"], "a");
        let c = v.completion_logprobs(&[t.clone(), t], 3);
        assert_eq!(c["text_offset"], json!([3, 5]));
        assert_eq!(c["top_logprobs"][0]["a"], json!(-1.5));
    }
}
