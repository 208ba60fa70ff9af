//! Integration tests of the real `lilypad` binary as a user runs it: subcommands (`bench`,
//! `tiny-model`, `info`, `doctor`, `prompt`, `parse`, `tool`), headless runs, `lilypad demo`, resume
//! and the journey on a real Python project in a real terminal under `tmux`. Each test starts
//! its own child processes.

#![expect(
    unreachable_pub,
    reason = "the helpers are `pub` to the modules of this one binary, which is all a test crate has"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not the helpers beside them"
)]

mod batch;
mod batch_harbor;
mod batch_image;
mod batch_image_own;
mod batch_kube;
mod batch_leaf;
mod batch_patcheval;
mod batch_registry;
mod bench_cli;
mod cli_model;
#[path = "../common/mod.rs"]
mod common;
#[path = "../model/convert_fixture/mod.rs"]
#[allow(
    dead_code,
    reason = "the model tests' fixture, of which the pull tests use only the writing"
)]
mod convert_fixture;
mod e2e_approvals;
mod e2e_attempts;
mod e2e_composer;
mod e2e_demo;
mod e2e_dock;
mod e2e_export;
mod e2e_fold;
mod e2e_journey;
mod e2e_keys;
mod e2e_pickers;
mod e2e_pr_review;
mod e2e_project;
mod e2e_resume;
mod e2e_review;
mod e2e_rewind;
mod export_cli;
mod headless;
mod hub_checkpoint;
mod hub_mock;
mod hub_models;
mod hub_pull;
mod project_docs;
mod prompt_cli;
mod reload_weights_cli;
mod rollout_cli;
mod run_engines;
mod run_pull;
mod session_door;
mod sweep_cli;
mod tools_cli;
mod wandb_cli;
