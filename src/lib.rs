//! Lilypad: a terminal coding assistant that runs the FrogNano-4B agent model in-process
//! (llama.cpp), executes its tool calls inside a sandbox, and puts every patch in front of a
//! person before it touches the repository.
//!
//! The crate is a library plus a thin binary (`src/main.rs`). Dependency direction is the
//! architecture: `protocol` at the bottom; `gguf`, `engine`, `prompt`, `tools`, `sandbox` in the
//! middle; `agent` above them; the interface and the headless runner at the top. Nothing points
//! upward: `docs/architecture.md` gives each module its layer, and `layering` checks the code
//! against that table.

pub mod agent;
pub mod bench;
pub mod cli;
pub mod config;
pub mod convert;
pub mod diff;
pub mod doctor;
pub mod engine;
pub mod export;
pub mod gguf;
pub mod headless;
pub mod hub;
pub mod launch;
#[cfg(test)]
mod layering;
pub mod prompt;
pub mod protocol;
pub mod quality;
pub mod sandbox;
pub mod serve;
pub mod session;
pub mod tasks;
pub mod testmodel;
pub mod tools;
pub mod tui;
