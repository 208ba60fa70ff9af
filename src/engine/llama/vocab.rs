//! Tokenisation as the model was trained: text is brought to Unicode NFC first, as the
//! checkpoint's `tokenizer.json` does before it splits (llama.cpp does not normalise, so a
//! decomposed `e` + U+0301 would otherwise read as other tokens than in training), then
//! tokenised by llama.cpp with the special tokens written out parsed, as in prompts. Also the
//! tokenisation by a GGUF's vocabulary alone (`vocab_only`: no tensor is read, no context is
//! made), for checking a converted vocabulary against the checkpoint's own tokenizer
//! (`crate::quality::vocab`).
//!
//! Does not own: the sample texts or the comparison.

use crate::engine::EngineError;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::borrow::Cow;
use std::path::Path;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// `text` in NFC (borrowed when it is already, which a quick check tells for nearly all text).
pub(super) fn nfc(text: &str) -> Cow<'_, str> {
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        _ => Cow::Owned(text.nfc().collect()),
    }
}

/// The tokens the model reads for `text`.
pub(super) fn tokenize(model: &LlamaModel, text: &str) -> Vec<LlamaToken> {
    model.vocab().tokenize(nfc(text).as_bytes(), false, true)
}

/// Bytes of the longest token of `model`'s vocabulary, special tokens written out (one pass
/// over the vocabulary at load).
pub(super) fn longest_token_bytes(model: &LlamaModel) -> u32 {
    let vocab = model.vocab();
    let mut piece = Vec::with_capacity(64);
    let mut longest = 0;
    for id in 0..model.n_vocab().max(0) {
        piece.clear();
        vocab.token_to_piece_into(LlamaToken(id), &mut piece, true, None);
        longest = longest.max(piece.len());
    }
    longest as u32
}

/// The token ids of each of `texts` by the vocabulary of the GGUF at `path`.
pub fn tokenize_texts(path: &Path, texts: &[&str]) -> Result<Vec<Vec<u32>>, EngineError> {
    let backend = crate::engine::backend::get()?;
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model =
        LlamaModel::load_from_file(backend, path, &params).map_err(|_| EngineError::Load {
            path: path.to_path_buf(),
            arch: "its vocabulary".into(),
        })?;
    Ok(texts
        .iter()
        .map(|t| tokenize(&model, t).iter().map(|tok| tok.0 as u32).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::nfc;
    use std::borrow::Cow;

    #[test]
    fn decomposed_accents_are_composed_and_normal_text_is_borrowed() {
        assert_eq!(nfc("cafe\u{301} nin\u{303}o"), "caf\u{e9} ni\u{f1}o");
        assert!(matches!(nfc("plain ascii <|im_end|>"), Cow::Borrowed(_)));
        assert!(matches!(nfc("d\u{e9}j\u{e0} vu"), Cow::Borrowed(_)));
        // Hangul jamo compose too, as the tokenizer.json normaliser does.
        assert_eq!(nfc("\u{1100}\u{1161}"), "\u{ac00}");
    }
}
