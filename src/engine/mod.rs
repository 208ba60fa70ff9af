//! The model engine: turns a prompt into a stream of text pieces. It owns model loading, GPU
//! offload, sampling, cancellation, the per-turn token cap, and reuse of what is already in the
//! model's memory between requests (prefix reuse plus state snapshots for rewinds). It knows
//! nothing about tools, prompts' structure or the interface: callers hand it prompt text.
//!
//! The in-process engine ([`llama`]) runs llama.cpp on one dedicated OS thread, because every
//! llama.cpp call blocks; callers talk to it through an [`EngineHandle`] and receive
//! [`EngineEvent`]s on a channel usable from async and blocking code alike.

mod backend;
pub mod llama;
pub mod remote;
pub mod script;
mod stream;
mod types;
mod utf8;

pub use llama::{EngineHandle, LoadedModel};
pub use script::ScriptEngine;
pub use stream::GenerationStream;
pub use types::{
    EngineError, EngineEvent, Figures, GenerateRequest, Generation, ParsedOutput, Reuse,
    SamplingParams, StopReason,
};
pub use utf8::Utf8Stream;
