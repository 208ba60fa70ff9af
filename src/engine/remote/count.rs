//! Counting tokens on the client, for servers that report no `usage` (llama-cpp-python's
//! streams, some proxies): the conversation is rendered with the built-in FrogNano template
//! and tokenised with the checkpoint's `tokenizer.json` through the `tokenizers` crate, so the
//! context limit holds on every server. The reply is counted from what arrived (reasoning,
//! content and tool-call arguments), which is what the next prompt will hold of it.
//!
//! Owns: loading the tokenizer and the two counts. Does not own: the server's own counts, which
//! win whenever it sends them (`super::client`).

use super::request::ChatRequest;
use super::RemoteError;
use crate::prompt::{GenerationPrompt, PromptSettings, Renderer};
use std::path::{Path, PathBuf};

/// A tokenizer.json and the template the prompt is rendered with.
pub struct TokenCounter {
    tokenizer: tokenizers::Tokenizer,
    renderer: Renderer,
    path: PathBuf,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("path", &self.path)
            .finish()
    }
}

impl TokenCounter {
    /// Load `path` (a Hugging Face `tokenizer.json`).
    pub fn load(path: &Path) -> Result<Self, RemoteError> {
        let tokenizer =
            tokenizers::Tokenizer::from_file(path).map_err(|source| RemoteError::Tokenizer {
                path: path.display().to_string(),
                source,
            })?;
        let renderer =
            Renderer::builtin(&PromptSettings::default()).map_err(|e| RemoteError::Tokenizer {
                path: path.display().to_string(),
                source: Box::new(e),
            })?;
        Ok(Self {
            tokenizer,
            renderer,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tokens of `text` as the model reads it (special tokens written out are single tokens).
    pub fn text(&self, text: &str) -> Option<usize> {
        match self.tokenizer.encode(text, false) {
            Ok(enc) => Some(enc.len()),
            Err(e) => {
                tracing::warn!("counting tokens with {}: {e}", self.path.display());
                None
            }
        }
    }

    /// Tokens of the prompt the request makes: its messages and tools rendered, ending with
    /// the opening of the assistant's turn.
    pub fn prompt(&self, request: &ChatRequest) -> Option<usize> {
        match self
            .renderer
            .render(&request.messages, &request.tools, GenerationPrompt::Add)
        {
            Ok(text) => self.text(&text),
            Err(e) => {
                tracing::warn!("rendering the prompt to count its tokens: {e}");
                None
            }
        }
    }
}

/// The tokenizer to count with: the configured file, else a `tokenizer.json` beside `model`
/// (a GGUF path or a checkpoint directory), else none.
pub fn find(configured: Option<&Path>, model: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return Some(p.to_path_buf());
    }
    let model = model?;
    let dir = if model.is_dir() {
        model
    } else {
        model.parent()?
    };
    Some(dir.join("tokenizer.json")).filter(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::find;

    #[test]
    fn the_configured_tokenizer_wins_then_one_beside_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"").unwrap();
        let own = std::path::Path::new("/elsewhere/tokenizer.json");
        assert_eq!(find(Some(own), Some(&model)).as_deref(), Some(own));
        assert_eq!(find(None, Some(&model)), None, "none beside it yet");
        std::fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
        let beside = Some(dir.path().join("tokenizer.json"));
        assert_eq!(find(None, Some(&model)), beside);
        assert_eq!(
            find(None, Some(dir.path())),
            beside,
            "a checkpoint directory"
        );
        assert_eq!(find(None, None), None);
    }
}
