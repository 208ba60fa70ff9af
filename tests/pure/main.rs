//! Integration tests that need nothing from the machine but a temporary directory and `git`:
//! the agent loop on the scripted engine and the host sandbox, the prompt parser and renderer
//! (goldens in `tests/golden/prompt/`, data in `tests/data/prompt/`), and the interface's views
//! (snapshots in `tests/snapshots/tui/`). No model, no engine, no child process of Lilypad.

mod agent;
mod prompt_parser;
mod prompt_render;
mod tui_views;
