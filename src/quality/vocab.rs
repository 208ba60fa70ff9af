//! The vocabulary check at the end of `lilypad convert`: the same texts (code, prose, digits,
//! CJK, emoji, odd whitespace, a chat prompt, and every added token of the checkpoint alone)
//! tokenised by the checkpoint's `tokenizer.json` (the `tokenizers` crate, as the model was
//! trained) and by llama.cpp through the new GGUF must give the same ids. A difference means
//! the model would read other tokens than it was trained on.
//!
//! Owns: the sample texts and the comparison. Does not own: either tokeniser
//! (`tokenizers`; [`crate::engine::llama::tokenize_texts`]) or printing (`cli`).

use super::QualityError;
use std::path::Path;

/// Texts every vocabulary check reads, besides the checkpoint's added tokens.
const SAMPLES: &[&str] = &[
    "def add(a, b):\n    \"\"\"Return the sum.\"\"\"\n    return a + b\n\n\nclass Stack:\n\tpass\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{v:?}\");\n}\n",
    "It's what we'll do; they've said you'd agree, and I'm sure they're RIGHT.",
    "Version 3.14.159 shipped on 2026-12-02 at 10:45, with 1234567 downloads.",
    "中文的句子，还有标点。日本語のテキストとカタカナ。한국어 문장입니다.",
    "Emoji: 🐸 👍🏽 🇫🇷 👩‍💻 and accents: é ñ ü ø ß Å.",
    // Decomposed accents: tokenizer.json normalises to NFC before it splits, and so does the
    // engine before llama.cpp tokenises (`engine::llama::vocab`).
    "Decomposed: cafe\u{301}, nin\u{303}o, A\u{30a}ngstro\u{308}m.",
    "  leading spaces,\ttabs,\r\nCRLF,\n\n\n   trailing spaces   \n",
    "<|im_start|>system\nYou are a coding agent.<|im_end|>\n<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n<think>\nLet me look.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call><|im_end|>\n",
];

/// One text the two tokenisers read differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocabMismatch {
    pub text: String,
    /// By tokenizer.json.
    pub expected: Vec<u32>,
    /// By llama.cpp through the GGUF.
    pub got: Vec<u32>,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocabReport {
    pub texts: usize,
    /// Tokens of all texts, by tokenizer.json.
    pub tokens: usize,
    pub mismatches: Vec<VocabMismatch>,
}

/// Compare the tokenisation of `tokenizer_json` and of the GGUF at `gguf` on the samples and
/// on each of the tokenizer's added tokens.
pub fn check(tokenizer_json: &Path, gguf: &Path) -> Result<VocabReport, QualityError> {
    let failed = |source| QualityError::Tokenizer {
        path: tokenizer_json.display().to_string(),
        source,
    };
    let tokenizer = tokenizers::Tokenizer::from_file(tokenizer_json).map_err(failed)?;
    let mut texts: Vec<String> = SAMPLES.iter().map(|s| s.to_string()).collect();
    let mut added: Vec<(u32, String)> = tokenizer
        .get_added_tokens_decoder()
        .into_iter()
        .map(|(id, t)| (id, t.content))
        .collect();
    added.sort();
    texts.extend(added.into_iter().map(|(_, t)| t));
    let mut expected = Vec::with_capacity(texts.len());
    for t in &texts {
        expected.push(
            tokenizer
                .encode(t.as_str(), false)
                .map_err(failed)?
                .get_ids()
                .to_vec(),
        );
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = crate::engine::llama::tokenize_texts(gguf, &refs)?;
    let tokens = expected.iter().map(Vec::len).sum();
    let mismatches = texts
        .iter()
        .zip(expected)
        .zip(got)
        .filter(|((_, e), g)| e != g)
        .map(|((t, e), g)| VocabMismatch {
            text: t.clone(),
            expected: e,
            got: g,
        })
        .collect();
    Ok(VocabReport {
        texts: texts.len(),
        tokens,
        mismatches,
    })
}
