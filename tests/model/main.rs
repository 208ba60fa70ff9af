//! Integration tests that run the tiny model in this process through real llama.cpp: the
//! engine, conversation slots, the agent on the real engine, the real Qwen3.5 vocabulary and
//! `lilypad convert`. Every test that uses an engine holds [`common::serial`], so they stay
//! one at a time across all modules of this binary.

#![expect(
    unreachable_pub,
    reason = "the helpers are `pub` to the modules of this one binary, which is all a test crate has"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not the helpers beside them"
)]

mod agent_model;
mod common;
mod convert;
mod convert_fixture;
mod engine;
mod engine_real_vocab;
mod ignore_eos;
mod logprobs;
mod mixed_prefill;
mod mtp;
mod offload;
mod quant;
mod rewind_memory;
mod rollout_turns;
mod sequences;
mod serve_slots;
mod tool_grammar;
mod warm_head;
