//! Requests, events, figures and errors of the engine: plain data, shared by every engine kind.

use serde::{Deserialize, Serialize};
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

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model emitted an end-of-generation token (`<|im_end|>`, `<|endoftext|>`).
    EndOfGeneration,
    /// The per-turn token cap was reached; the turn is truncated.
    TokenCap,
    /// The caller cancelled.
    Cancelled,
    /// The context is full.
    ContextFull,
}

/// How the prompt was matched against what the engine had in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reuse {
    /// Nothing was in memory.
    Fresh,
    /// The prompt extended the memory: only the new tokens were read.
    Extended,
    /// The prompt diverged; memory was rewound to a snapshot at `to` tokens, then the rest read.
    Rewound { to: usize },
    /// The prompt diverged before any snapshot: memory was cleared and the prompt read in full.
    Reprefilled,
}

/// Figures for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub prompt_tokens: usize,
    /// Prompt tokens already in memory and not read again.
    pub reused_tokens: usize,
    /// Prompt tokens actually read by the model for this request.
    pub evaluated_tokens: usize,
    pub reuse: Reuse,
    pub generated_tokens: usize,
    pub prefill_seconds: f64,
    pub decode_seconds: f64,
}

impl Figures {
    /// Prompt tokens read per second (0 when nothing was read).
    pub fn prefill_tokens_per_second(&self) -> f64 {
        rate(self.evaluated_tokens, self.prefill_seconds)
    }

    /// Generated tokens per second.
    pub fn decode_tokens_per_second(&self) -> f64 {
        rate(self.generated_tokens, self.decode_seconds)
    }
}

fn rate(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// What a generation stream delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// Decoded text; never splits a multi-byte character.
    Piece(String),
    /// The end of the stream.
    Done(Generation),
    /// The request failed; nothing more follows.
    Failed(String),
}

/// The outcome of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub stop: StopReason,
    pub figures: Figures,
    /// The generated token ids (without the end-of-generation token).
    pub tokens: Vec<u32>,
}
