//! The interactive interface: a ratatui application that renders the agent's [`Event`]s and
//! sends [`Op`]s, and nothing else. It never touches the engine, Docker or Kubernetes; the
//! session patch comes through a [`PatchSource`] the caller provides.
//!
//! Shape (after codex's tui and gitui): [`app::App`] is a state machine (events and keys in,
//! effects out) with no I/O; [`views`] draw it, the [`transcript`] draws its own items, and
//! both draw diffs with [`diff_lines`]; the runner here performs effects, computes diffs on
//! blocking threads, reads keys on their own thread, and draws at most [`FRAMES_PER_SECOND`]
//! times a second, coalescing every change in between. Keys, hints and help live in one table
//! ([`keymap`]); colours come from a [`theme::Theme`] by role; copying goes through
//! [`clipboard`].
//!
//! Invariant: the terminal is restored on every exit path, panics included
//! ([`terminal::TerminalGuard`]).

pub mod actions;
pub mod app;
pub mod attempts;
pub mod clipboard;
pub mod diff_cursor;
pub mod diff_gaps;
pub mod diff_lines;
pub mod diff_split;
pub mod fuzzy;
pub mod history;
pub mod keymap;
pub mod line_comments;
pub mod notify;
pub mod prompts;
pub mod review_comments;
mod runner;
pub mod session_export;
pub mod settings;
pub mod terminal;
pub mod text_input;
pub mod theme;
pub mod transcript;
pub mod views;
pub mod wrap;

pub use app::{App, AppOptions, Effect, PatchDecision};
pub use runner::{replay, run};
pub use settings::{
    DiffLayout, InterfaceSettings, KeyScheme, NotifyEvent, NotifyMethod, ReasoningView, Screen,
};
pub use theme::Theme;

use crate::protocol::{Event, Op};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Upper bound on redraws per second; changes in between are drawn together.
pub const FRAMES_PER_SECOND: u64 = 60;

/// Errors that end the interface.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
    #[error("{0}")]
    Theme(#[from] theme::ThemeError),
}

/// Which way a move goes: toward the end (the next hunk, file or item, a page down, the next
/// replay turn) or back toward the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Back,
    Forward,
}

/// Where the session patch comes from (the sandbox's workspace, in a live session).
#[async_trait::async_trait]
pub trait PatchSource: Send + Sync {
    /// The patch of everything the session changed (empty: nothing).
    async fn export(&self) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;
}

/// Where command approval rules are saved for the repository (the config file, in a live
/// session).
pub trait RuleStore: Send + Sync {
    /// Save "commands starting with `prefix` run without asking" for this session's
    /// repository; returns the file it went to.
    fn save_command_prefix(
        &self,
        prefix: &str,
    ) -> Result<PathBuf, Box<dyn std::error::Error + Send + Sync>>;
}

/// A running agent as the interface sees it.
pub struct SessionLink {
    pub ops: UnboundedSender<Op>,
    pub events: UnboundedReceiver<Event>,
    pub patch: Option<Arc<dyn PatchSource>>,
    /// A resumed session's recorded events, shown before the live ones (empty otherwise).
    pub history: Vec<Event>,
    /// Where approval rules are saved (`None`: they last for the session only).
    pub rules: Option<Arc<dyn RuleStore>>,
    /// The session's log (`/export` writes the session as Markdown beside it; `None`: no
    /// log to export).
    pub log: Option<std::path::PathBuf>,
}

/// One attempt's session link and seed.
pub struct AttemptLink {
    pub link: SessionLink,
    pub seed: u32,
}

/// What start-up reports while the model loads and the sandbox starts.
pub enum Startup {
    Progress {
        label: String,
        fraction: Option<f64>,
    },
    Ready(SessionLink),
    /// Several attempts at one task, each already sent the task (`--attempts N`).
    Attempts(Vec<AttemptLink>),
    /// Start-up failed; shown with its chain of sources.
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// A warning to show in the transcript (e.g. what the sandbox image lacks).
    Notice(String),
}

/// How to run the interface.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    pub theme: Theme,
    /// The user's repository: where the session patch is applied.
    pub repo: Option<PathBuf>,
    /// Sent as the first message once the agent is ready.
    pub task: Option<String>,
    pub step_mode: bool,
    /// Warnings shown at the top of the transcript (e.g. the host sandbox warning).
    pub notices: Vec<String>,
    /// How reasoning is shown at the start (`r` changes it).
    pub reasoning: ReasoningView,
    /// Which keys the transcript answers to (`[interface] keys`).
    pub keys: KeyScheme,
    /// How a change under review is drawn at the start (`[interface] diff`; `t` switches).
    pub diff: DiffLayout,
    /// `[interface] highlight_limit`: past this many lines a diff has no syntax colours.
    pub highlight_limit: usize,
    /// How and when to get the person's attention while the terminal is out of focus.
    pub notify: (NotifyMethod, Vec<NotifyEvent>),
    /// `[interface] notify_command`: run on each event of `notify`.
    pub notify_command: Vec<String>,
    /// The alternate screen or the main one, and whether the mouse is taken.
    pub screen: Screen,
    /// The file the message line's history is kept in (every repository's, each message
    /// with its repository); `None`: no history.
    pub history: Option<PathBuf>,
    /// The directories of prompt files for the command palette, a later one's file
    /// overriding an earlier one's of the same name (the person's, then the repository's).
    pub prompt_dirs: Vec<PathBuf>,
    /// The repository's check command (`[sandbox] check`), which `/check` runs in the sandbox.
    pub check: Option<String>,
}

/// How a session ended, for the summary printed after the screen is restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOutcome {
    pub session_id: String,
    pub patch: PatchDecision,
}
