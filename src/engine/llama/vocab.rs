//! llama.cpp's tokenisation by a GGUF's vocabulary alone (`vocab_only`: no tensor is read, no
//! context is made), for checking a converted vocabulary against the checkpoint's own
//! tokenizer (`crate::quality::vocab`).
//!
//! Owns: that one load and the tokenisation (special tokens written out are parsed, as in
//! prompts). Does not own: the sample texts or the comparison.

use crate::engine::EngineError;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use std::path::Path;

/// The token ids of each of `texts` by the vocabulary of the GGUF at `path`.
pub fn tokenize_texts(path: &Path, texts: &[&str]) -> Result<Vec<Vec<u32>>, EngineError> {
    let backend = crate::engine::backend::get()?;
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model =
        LlamaModel::load_from_file(backend, path, &params).map_err(|_| EngineError::Load {
            path: path.to_path_buf(),
            arch: "its vocabulary".into(),
        })?;
    let vocab = model.vocab();
    Ok(texts
        .iter()
        .map(|t| {
            vocab
                .tokenize(t.as_bytes(), false, true)
                .iter()
                .map(|tok| tok.0 as u32)
                .collect()
        })
        .collect())
}
