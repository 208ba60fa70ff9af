//! Integration tests that need nothing from the machine but a temporary directory and `git`:
//! the agent loop on the scripted engine and the host sandbox, the prompt parser and renderer
//! (goldens in `tests/golden/prompt/`, data in `tests/data/prompt/`), and the interface's views
//! (snapshots in `tests/snapshots/tui/`), and the setup script's decisions on fake trees. No
//! model, no engine, no child process of Lilypad.

#![expect(
    unreachable_pub,
    reason = "the helpers are `pub` to the modules of this one binary, which is all a test crate has"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not the helpers beside them"
)]

mod agent;
mod agent_instructions;
mod agent_review;
mod agent_shell;
#[path = "../common/mod.rs"]
mod common;
mod prompt_parity;
mod prompt_parser;
mod prompt_render;
mod rewind;
mod setup_script;
mod tui_approvals;
mod tui_attempts;
mod tui_big_changes;
mod tui_chat_keys;
mod tui_check;
mod tui_composer;
mod tui_conventions;
mod tui_dock;
mod tui_edit_views;
mod tui_export;
mod tui_line_comments;
mod tui_pickers;
mod tui_pr_review;
mod tui_reasoning;
mod tui_rewind;
mod tui_streaming;
mod tui_views;
mod turn_records;
