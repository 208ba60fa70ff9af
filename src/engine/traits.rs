//! The one seam every engine kind implements: [`Engine`]. The in-process llama.cpp engine, the
//! scripted engine (a mock of the model) and a remote OpenAI-compatible server all take a
//! [`GenerateRequest`] and answer with a [`GenerationStream`]; the agent and `lilypad serve`
//! hold an `Arc<dyn Engine>` (behind [`super::TemplatedModel`]) and never name the kind.
//!
//! Invariants: a stream ends with exactly one `Done` or `Failed`; cancelling goes through the
//! stream ([`GenerationStream::cancel`]) and stops that request only; the figures of a request
//! arrive with its `Done`. Requests name a [`SequenceId`] so that an engine holding several
//! conversations knows which one a request continues.
//!
//! Does not own: the chat template (an engine that reads text is handed rendered text).

use super::stream::GenerationStream;
use super::types::{EngineError, Figures, GenerateRequest, Prompt, PromptForm, SequenceId};
use std::path::Path;

/// A model engine: reads a prompt, streams the generation back.
pub trait Engine: Send + Sync {
    /// One line for status bars and logs, e.g. `llama.cpp: frognano.gguf (qwen35, CPU)`.
    fn describe(&self) -> String;

    /// The form of prompt the engine reads; [`super::TemplatedModel`] renders the chat
    /// template for engines that read text.
    fn reads(&self) -> PromptForm;

    /// The chat template the model carries, if the engine knows it (the in-process engine
    /// reads it from the GGUF file).
    fn chat_template(&self) -> Option<String> {
        None
    }

    /// Whether the engine also reads prompts given as token ids ([`super::Prompt::Tokens`]).
    fn reads_tokens(&self) -> bool {
        false
    }

    /// How many tokens the vocabulary has, for engines that tokenise here.
    fn vocabulary(&self) -> Option<u32> {
        None
    }

    /// The token ids the model reads for `text` (special tokens written out parsed), for
    /// engines that tokenise here; `Ok(None)` for the others.
    fn tokenize(&self, text: &str) -> Result<Option<Vec<u32>>, EngineError> {
        let _ = text;
        Ok(None)
    }

    /// Each token's bytes, special tokens written out; `Ok(None)` for engines that do not
    /// tokenise here.
    fn token_bytes(&self, tokens: &[u32]) -> Result<Option<Vec<Vec<u8>>>, EngineError> {
        let _ = tokens;
        Ok(None)
    }

    /// Start generating. Raw engines stream `Piece`s; engines that parse themselves may
    /// stream `Parsed` output.
    fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError>;

    /// Name the conversation in `sequence` for the routers in front of a server (the remote
    /// engine sends it as `X-Session-ID`, so that a router keeps it on one server); engines
    /// without routers ignore it.
    fn name_sequence(&self, sequence: SequenceId, name: &str) {
        let _ = (sequence, name);
    }

    /// Save what `sequence` holds so that a resumed session can skip reading its conversation
    /// again; `Ok(None)` for engines that keep no memory here. Returns the tokens saved.
    fn save_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        let _ = (sequence, path);
        Ok(None)
    }

    /// Load memory saved by [`Engine::save_state`] into `sequence`; returns its token count.
    fn load_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        let _ = (sequence, path);
        Ok(None)
    }

    /// Read `prompt` into conversation `from` once and make each of `copies` a copy of it, so
    /// that every copy's first request finds the prompt already read (several attempts at one
    /// task, the `n` choices of one request). Returns the figures of that one read (its
    /// `prompt_tokens` are what each copy holds), or `None` for engines that keep no memory
    /// here (each copy then reads the prompt itself).
    fn share_prompt(
        &self,
        from: SequenceId,
        prompt: &Prompt,
        copies: &[SequenceId],
    ) -> Result<Option<Figures>, EngineError> {
        let _ = (from, prompt, copies);
        Ok(None)
    }

    /// Drop what the engine keeps of `sequences` (copies made for one request, of no use
    /// after it), once the requests already sent for them have ended. Engines that keep no
    /// memory here ignore it.
    fn forget(&self, sequences: &[SequenceId]) {
        let _ = sequences;
    }
}
