//! Requests, events, figures and errors of the engine: plain data, shared by every engine kind.

use serde::{Deserialize, Serialize};

pub use crate::protocol::{Figures, Reuse, StopReason};
use std::path::PathBuf;
use thiserror::Error;

/// What went wrong in the engine, in words a user can act on.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    File(#[from] crate::gguf::GgufError),
    #[error("llama.cpp could not load {path} (architecture {arch}): the file is unsupported by this build or corrupt")]
    Load { path: PathBuf, arch: String },
    #[error("not enough memory for a context of {ctx} tokens (the model's attention cache alone needs about {kv_mib} MiB); lower it with --ctx, e.g. --ctx {suggest}")]
    ContextMemory { ctx: u32, kv_mib: u64, suggest: u32 },
    #[error("the prompt has {prompt} tokens but the context holds only {ctx}")]
    PromptTooLong { prompt: usize, ctx: u32 },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("llama.cpp failed while {doing}: {detail}")]
    Llama { doing: &'static str, detail: String },
    #[error("the engine thread has stopped")]
    Stopped,
    #[error("llama.cpp backend: {0}")]
    Backend(String),
}

/// Sampling for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: i32,
    pub min_p: f32,
    pub seed: u32,
    pub greedy: bool,
}

impl SamplingParams {
    /// From the settings; a missing seed becomes a fresh one.
    pub fn from_settings(s: &crate::config::SamplingSettings) -> Self {
        let seed = s.seed.unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            nanos ^ std::process::id()
        });
        Self {
            temperature: s.temperature,
            top_p: s.top_p,
            top_k: s.top_k,
            min_p: s.min_p,
            seed,
            greedy: s.greedy,
        }
    }

    pub fn greedy() -> Self {
        Self {
            greedy: true,
            ..Self::from_settings(&Default::default())
        }
    }
}

/// One generation request: the full prompt text (special tokens written out, as the template
/// renders them); the engine works out what it already has in memory.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: String,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
}

/// What a generation stream delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// Decoded text; never splits a multi-byte character.
    Piece(String),
    /// The end of the stream.
    Done(Generation),
    /// Output an engine received already parsed (servers that split reasoning and tool calls
    /// themselves); raw engines only send `Piece`.
    Parsed(ParsedOutput),
    /// The request failed; nothing more follows.
    Failed(String),
}

/// Already-parsed model output.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedOutput {
    Reasoning(String),
    Content(String),
    ToolCall(crate::protocol::ToolCall),
}

/// The outcome of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub stop: StopReason,
    pub figures: Figures,
    /// The generated token ids (without the end-of-generation token).
    pub tokens: Vec<u32>,
}
