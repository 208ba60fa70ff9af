//! The model engine: turns a prompt into a stream of text pieces. It owns model loading, GPU
//! offload, sampling, cancellation, the per-turn token cap, and reuse of what is already in the
//! model's memory between requests (prefix reuse plus state snapshots for rewinds). It knows
//! nothing about tools or the interface: an engine reads prompt text, or a conversation if it
//! applies the chat template itself (a remote server).
//!
//! Every engine kind implements one trait, [`Engine`]: the in-process engine ([`llama`]), the
//! scripted engine ([`script`], a mock of the model) and a remote OpenAI-compatible server
//! ([`remote`]). [`TemplatedModel`] puts the chat template in front of any of them, so the
//! agent and `lilypad serve` hand it conversations and never name the kind.
//!
//! The in-process engine runs llama.cpp on one dedicated OS thread, because every llama.cpp
//! call blocks; callers talk to it through an [`EngineHandle`] and receive [`EngineEvent`]s
//! on a channel usable from async and blocking code alike.

mod backend;
pub mod llama;
pub mod logprob;
mod placement;
pub mod remote;
pub mod script;
mod settings;
mod stream;
mod templated;
mod traits;
mod types;
mod utf8;

pub use backend::{devices, BackendDevice};
pub use llama::{
    EngineHandle, LoadedModel, MemoryReport, OccupancyReading, ScoreStream, ScoredRows,
    SequenceMemory,
};
pub use placement::{CacheType, FlashAttention, Mtp, SplitMode};
pub use script::{ScriptEngine, ScriptSettings};
pub use settings::{EngineSettings, SamplingSettings};
pub use stream::GenerationStream;
pub use templated::{TemplatedModel, TurnRequest};
pub use traits::Engine;
pub use types::{
    DraftFigures, EngineError, EngineEvent, Figures, GenerateRequest, Generation, ParsedOutput,
    Prompt, PromptForm, Reuse, SampledToken, SamplingParams, SequenceId, StopReason, TokenReport,
};
pub use utf8::Utf8Stream;
