//! Integration tests that run the tiny model in this process through real llama.cpp: the
//! engine, conversation slots, the agent on the real engine, the real Qwen3.5 vocabulary and
//! `lilypad convert`. Every test that uses an engine holds [`common::serial`], so they stay
//! one at a time across all modules of this binary.

// The helpers are `pub` to the modules of this one binary, which is all a test crate has.
#![allow(unreachable_pub)]
// Test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not
// the helpers beside them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_model;
mod common;
mod convert;
mod convert_fixture;
mod engine;
mod engine_real_vocab;
mod ignore_eos;
mod mtp;
mod offload;
mod quant;
mod rewind_memory;
mod sequences;
mod serve_slots;
mod tool_grammar;
