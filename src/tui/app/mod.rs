//! The interface's state machine: agent events and keys in, [`Effect`]s out. It never blocks
//! and never does I/O: the runner (`tui::run`) performs the effects (sending operations,
//! computing diffs off the draw path, exporting and applying the patch, opening `$EDITOR`) and
//! feeds their results back through the `on_*` methods. That keeps every view testable with a
//! `TestBackend` and a list of events.
//!
//! Invariants: at most one review is in front at a time (others wait in `queued`); the App
//! only learns what happened from events (a decision sent is not shown as taken until the
//! agent's `ToolResult` says so).

pub mod composer;
mod decision_line;
mod dock;
mod keys;
pub use keys::FOLD_LINES;
pub mod pickers;
mod pr_keys;
pub mod pr_review;
pub mod review;
pub mod search;
mod status;

pub use composer::Composer;
pub use dock::{DockView, Pane};
pub use pr_review::PatchReview;
pub use review::{ChangeReview, CommandReview, Review};
pub use search::Search;
pub use status::{AgentState, Status};

use crate::diff::{FileDiff, Highlighter};
use crate::protocol::{ApprovalKind, Event, Op, RequestId};
use crate::tui::actions::ActionError;
use crate::tui::theme::Theme;
use crate::tui::transcript::{Level, RenderCtx, Transcript};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Work the runner does for the App.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Op),
    /// Compute a change's diff (off the draw path), then call [`App::on_diff`].
    ComputeDiff {
        id: RequestId,
        path: String,
        before: Option<String>,
        after: String,
        /// Which version of the change: 0 the proposal, n the person's n-th edit.
        revision: u32,
    },
    /// Export the session patch, then call [`App::on_patch`].
    ExportPatch,
    /// Write the session as Markdown beside its log, then call [`App::on_exported`].
    ExportSession,
    /// Save a command approval rule for the repository (the review's decision follows).
    SaveRule {
        prefix: String,
    },
    /// Open `text` in `$EDITOR`, then call [`App::on_edited`].
    OpenEditor {
        id: RequestId,
        path: String,
        text: String,
    },
    /// `git apply` the patch in the repository, then call [`App::on_patch_done`].
    ApplyPatch(Vec<u8>),
    SavePatch {
        path: PathBuf,
        bytes: Vec<u8>,
    },
    /// Open the message line's text in `$EDITOR`, then call [`App::on_draft_edited`].
    EditDraft(String),
    /// Stop the program (SIGTSTP) with the terminal restored; the screen is drawn again on
    /// `fg`.
    Suspend,
    /// List the repository's files for the file picker, then call [`App::on_paths`].
    ListPaths,
    /// Copy `text` out of the interface (OSC 52, or a file), then call [`App::on_copied`].
    Copy {
        what: String,
        text: String,
    },
    /// Leave the interface.
    Quit,
}

/// What is in front of the transcript.
#[derive(Debug)]
pub enum Mode {
    Transcript,
    Review(Review),
    Patch(PatchReview),
}

/// Popups over everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    ConfirmQuit(String),
    /// The conversation is full; the message typed waits for the choice of how to go on.
    ContextFull(String),
    /// Which turn to rewind to (`turn`, one of `turns`), asked before anything is sent.
    Rewind {
        turn: u32,
        turns: Vec<u32>,
    },
}

/// What became of the session patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchDecision {
    /// Not asked for, or not decided.
    Undecided,
    /// The session changed nothing.
    Empty,
    Applied {
        repo: PathBuf,
    },
    Saved {
        path: PathBuf,
    },
    Discarded,
}

/// Settings the App starts with.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub theme: Theme,
    /// The user's repository, where the patch is applied.
    pub repo: Option<PathBuf>,
    /// Whether a session patch can be exported (a live session with a sandbox).
    pub has_patch: bool,
    /// Replaying a recorded session: no operations are sent.
    pub replay: bool,
}

/// See the module docs.
pub struct App {
    pub theme: Theme,
    pub hl: Highlighter,
    /// How reasoning is shown (`[interface] reasoning`, cycled by `r`).
    pub reasoning: crate::tui::ReasoningView,
    epoch: u64,
    pub transcript: Transcript,
    pub status: Status,
    pub mode: Mode,
    pub overlay: Option<Overlay>,
    /// The message line: its text, folded pastes, the messages sent and their search.
    pub composer: Composer,
    pub input_focus: bool,
    queued: VecDeque<crate::protocol::ApprovalRequest>,
    /// Request id to call id, so a diff can be attached to its transcript item.
    calls: HashMap<RequestId, String>,
    pub patch: PatchDecision,
    pub options: AppOptions,
    /// Replay position: (events, next index).
    pub replay: Option<(Vec<Event>, usize)>,
    pub progress: Option<(String, Option<f64>)>,
    pub quitting: bool,
    /// Messages typed while the agent was busy, waiting for the next turn boundary.
    pub queued_messages: Vec<String>,
    /// The last task stopped at the context limit: the next message needs a way on.
    pub context_full: bool,
    /// Applying a resumed session's recorded events: nothing is asked or exported.
    history: bool,
    /// A search of the transcript, while one is typed or its matches are visited.
    pub search: Option<Search>,
    /// First line of the help overlay shown, and how many lines its page had when drawn.
    pub help_scroll: usize,
    pub help_page: std::cell::Cell<usize>,
    /// Which attempt this is, when several attempts run (`attempt 2 of 3`), for the status
    /// line.
    pub attempt_label: Option<String>,
    /// Which keys the transcript answers to. The runner sets `[interface] keys` (chat by
    /// default); a bare App (unit tests, benchmarks) keeps the modal keys.
    pub keys: crate::tui::KeyScheme,
    /// How a change under review is drawn (`[interface] diff`, then `t`).
    pub diff_layout: crate::tui::DiffLayout,
    /// Leaving with review comments not sent was warned about by this key's action: the
    /// same again goes ahead (any other key forgets the warning).
    pub(crate) unsent_warned: Option<crate::tui::keymap::Action>,
    /// The command palette, while the message line starts with the `/` that opened it.
    pub palette: Option<pickers::Palette>,
    /// The file picker, while the cursor is in the word of the `@` that opened it.
    pub picker: Option<pickers::PathPicker>,
    /// The prompt files the palette offers (the runner reads them at start).
    pub prompts: Vec<crate::tui::prompts::PromptFile>,
    /// The repository's paths for the file picker (listed each time it opens).
    pub paths: pickers::PathList,
    /// The person's command (`!cmd`) runs while the agent waits: the state to go back to
    /// once it has run (meanwhile the state is busy, so Esc interrupts it).
    pub(crate) shell_before: Option<AgentState>,
    /// The repository's check command (`[sandbox] check`), which `/check` runs as `!cmd` would.
    pub check: Option<String>,
    /// The session patches exported so far (for the last turn's changes) and the session
    /// review put aside.
    pub patch_memory: pr_review::PatchMemory,
}

impl App {
    pub fn new(options: AppOptions) -> Self {
        let hl = options.theme.highlighter();
        Self {
            theme: options.theme.clone(),
            hl,
            reasoning: crate::tui::ReasoningView::default(),
            epoch: 0,
            transcript: Transcript::new(),
            status: Status::default(),
            mode: Mode::Transcript,
            overlay: None,
            composer: Composer::default(),
            input_focus: false,
            queued: VecDeque::new(),
            calls: HashMap::new(),
            patch: PatchDecision::Undecided,
            replay: None,
            progress: None,
            quitting: false,
            queued_messages: Vec::new(),
            context_full: false,
            history: false,
            search: None,
            help_scroll: 0,
            help_page: std::cell::Cell::new(20),
            attempt_label: None,
            keys: crate::tui::KeyScheme::Modal,
            diff_layout: crate::tui::DiffLayout::default(),
            unsent_warned: None,
            palette: None,
            picker: None,
            prompts: Vec::new(),
            paths: pickers::PathList::default(),
            shell_before: None,
            check: None,
            patch_memory: Default::default(),
            options,
        }
    }

    /// Settings for drawing cells.
    pub fn render_ctx(&self) -> RenderCtx<'_> {
        RenderCtx {
            theme: &self.theme,
            hl: &self.hl,
            reasoning: self.reasoning,
            epoch: self.epoch,
        }
    }

    pub(crate) fn bump_epoch(&mut self) {
        self.epoch += 1;
    }

    /// Start-up progress (model loading, sandbox start).
    pub fn on_progress(&mut self, label: String, fraction: Option<f64>) {
        self.progress = Some((label, fraction));
    }

    /// Start-up failed: the error, with its sources, stays on screen until the person quits.
    pub fn on_startup_failed(&mut self, error: &(dyn std::error::Error + 'static)) {
        self.progress = None;
        self.status.state = AgentState::Ended;
        self.transcript.notice(
            Level::Error,
            format!("could not start: {}", with_sources(error)),
        );
    }

    /// A resumed session's recorded events, shown as they happened before the live agent's
    /// events follow. Only diffs are computed: no review opens (a pending approval is asked
    /// again by the agent) and no patch is exported.
    pub fn load_history(&mut self, events: Vec<Event>) -> Vec<Effect> {
        self.history = true;
        let mut fx = Vec::new();
        for ev in events {
            fx.extend(
                self.on_event(ev)
                    .into_iter()
                    .filter(|e| matches!(e, Effect::ComputeDiff { .. })),
            );
        }
        self.history = false;
        // Whatever was queued or pending when the session stopped is not any more.
        self.queued_messages.clear();
        self.transcript.notice(
            Level::Info,
            "resumed: the transcript above was recorded earlier",
        );
        fx
    }

    /// An agent event.
    pub fn on_event(&mut self, ev: Event) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.transcript.apply(&ev);
        self.status.apply(&ev, Instant::now());
        match ev {
            Event::SessionStarted {
                session_id,
                model,
                sandbox,
                ..
            } => {
                self.progress = None;
                self.transcript.notice(
                    Level::Info,
                    format!("session {session_id} · {model} · {sandbox}"),
                );
            }
            Event::ApprovalRequested(req) => {
                self.calls.insert(req.id, req.call.id.clone());
                if let ApprovalKind::Change {
                    path,
                    before,
                    after,
                    binary_before,
                } = &req.kind
                {
                    fx.push(Effect::ComputeDiff {
                        id: req.id,
                        path: path.clone(),
                        before: if *binary_before { None } else { before.clone() },
                        after: after.clone(),
                        revision: 0,
                    });
                }
                if self.replay.is_none() && !self.history {
                    if matches!(self.mode, Mode::Review(_)) {
                        self.queued.push_back(req);
                    } else {
                        self.input_focus = false;
                        // The panel docks under the turn that proposed it: show that turn.
                        self.transcript.to_bottom();
                        self.mode = Mode::Review(Review::new(req));
                    }
                }
            }
            Event::ToolResult { call_id, .. } => {
                // A decision taken elsewhere (policy, interrupt) closes a stale review.
                if let Mode::Review(r) = &self.mode {
                    if r.request().call.id == call_id {
                        self.next_review();
                    }
                }
            }
            Event::MessageQueued { text } => self.queued_messages.push(text),
            Event::ShellRan { .. } => {
                if let Some(state) = self.shell_before.take() {
                    self.status.state = state;
                }
            }
            Event::UserMessage { text } => {
                // The person's commands (`!cmd`) may have gone at its head.
                let delivered = |q: &String| *q == text || text.ends_with(&format!("\n\n{q}"));
                if let Some(i) = self.queued_messages.iter().position(delivered) {
                    self.queued_messages.remove(i);
                }
            }
            Event::ConversationRestarted { .. } | Event::ToolResultsDropped { .. } => {
                self.context_full = false;
            }
            Event::Rewound { .. } => {
                self.context_full = false;
                self.queued_messages.clear();
                if self.replay.is_none() && !self.history && matches!(self.mode, Mode::Transcript) {
                    self.input_focus = true;
                }
            }
            Event::TaskFinished { reason, .. } => {
                self.patch_memory.task_ended = true;
                self.context_full = reason == crate::protocol::FinishReason::ContextLimit;
                if self.context_full && self.replay.is_none() && !self.history {
                    self.transcript.notice(
                        Level::Warning,
                        "the conversation is full. Type a message (i): you will choose between a \
                         fresh conversation that carries the task and the patch so far, and \
                         dropping the oldest tool results",
                    );
                }
                if self.options.has_patch && self.replay.is_none() && !self.history {
                    fx.push(Effect::ExportPatch);
                }
                if self.replay.is_none() && matches!(self.mode, Mode::Transcript) {
                    self.input_focus = true;
                }
            }
            Event::SessionEnded => {
                self.transcript.notice(Level::Info, "session ended");
            }
            _ => {}
        }
        fx
    }

    /// Close the current review and show the next queued one.
    pub(crate) fn next_review(&mut self) {
        self.mode = match self.queued.pop_front() {
            Some(req) => {
                self.transcript.to_bottom();
                Mode::Review(Review::new(req))
            }
            None => Mode::Transcript,
        };
    }

    /// A diff computed for a request's proposal.
    pub fn on_diff(&mut self, id: RequestId, diff: FileDiff) {
        self.on_diff_of(id, 0, diff);
    }

    /// A diff computed for one version of a change (0: the proposal, n: the n-th edit). A
    /// diff of a version the review has moved past is dropped.
    pub fn on_diff_of(&mut self, id: RequestId, revision: u32, diff: FileDiff) {
        let diff = Arc::new(diff);
        let current = match &mut self.mode {
            Mode::Review(Review::Change(c)) if c.req.id == id => {
                if c.revision != revision {
                    return;
                }
                c.set_diff(diff.clone());
                true
            }
            _ => revision == 0,
        };
        if current {
            if let Some(call_id) = self.calls.get(&id).cloned() {
                if let Some(item) = self.transcript.tool_mut(&call_id) {
                    item.diff = Some(diff);
                }
            }
        }
    }

    /// The session patch, exported and parsed (or why not).
    pub fn on_patch(&mut self, result: Result<(Vec<u8>, Vec<FileDiff>), ActionError>) {
        match result {
            Ok((raw, _)) if raw.is_empty() => {
                self.patch = PatchDecision::Empty;
                self.transcript
                    .notice(Level::Info, "the session made no changes to the repository");
            }
            Ok((raw, files)) => {
                self.patch = PatchDecision::Undecided;
                if !matches!(self.mode, Mode::Review(_)) {
                    self.show_patch_review(raw, files);
                }
            }
            Err(e) => self.transcript.notice(
                Level::Error,
                format!("could not export the session patch: {e}"),
            ),
        }
    }

    /// What `$EDITOR` saved for a change or a command (or why that failed): an edited change
    /// is reviewed again as its diff against the file; an unchanged or empty file leaves the
    /// review as it was.
    pub fn on_edited(&mut self, id: RequestId, result: Result<String, ActionError>) -> Vec<Effect> {
        let Mode::Review(r) = &mut self.mode else {
            return Vec::new();
        };
        if r.request().id != id {
            return Vec::new();
        }
        let text = match result {
            Ok(t) => t,
            Err(e) => {
                let note = Some(format!("editor failed: {e}; nothing was approved"));
                match r {
                    Review::Change(c) => (c.opened, c.note) = (None, note),
                    Review::Command(c) => (c.opened, c.note) = (None, note),
                }
                return Vec::new();
            }
        };
        match r {
            Review::Change(c) => match c.edited(text) {
                review::EditorOutcome::Edited => vec![Effect::ComputeDiff {
                    id,
                    path: c.path.clone(),
                    before: if c.binary_before {
                        None
                    } else {
                        c.before.clone()
                    },
                    after: c.after.clone(),
                    revision: c.revision,
                }],
                review::EditorOutcome::Unchanged | review::EditorOutcome::Emptied => Vec::new(),
            },
            Review::Command(c) => {
                c.edited(&text);
                Vec::new()
            }
        }
    }

    /// Send a decision and close the review.
    pub(crate) fn decide(
        &mut self,
        id: RequestId,
        decision: crate::protocol::ReviewDecision,
    ) -> Vec<Effect> {
        // The decision stays in the transcript, under the call it decided, and the
        // conversation, scrolled or not while it waited, follows the work again.
        if let Mode::Review(r) = &self.mode {
            let line = decision_line::describe(r, &decision);
            self.transcript.notice(Level::Info, line);
            self.transcript.to_bottom();
        }
        self.status.state = AgentState::RunningTool;
        self.next_review();
        vec![Effect::Send(Op::Review { id, decision })]
    }

    /// Where a copy went (or why it failed).
    /// `/export` done: where the Markdown went, or why it did not.
    pub fn on_exported(&mut self, result: Result<PathBuf, ActionError>) {
        match result {
            Ok(path) => self.transcript.notice(
                Level::Info,
                format!("session written as Markdown to {}", path.display()),
            ),
            Err(e) => self
                .transcript
                .notice(Level::Error, format!("the session was not exported: {e}")),
        }
    }

    pub fn on_copied(
        &mut self,
        what: &str,
        result: Result<crate::tui::clipboard::Copied, ActionError>,
    ) {
        use crate::tui::clipboard::Copied;
        match result {
            Ok(Copied::Clipboard { chars }) => self.transcript.notice(
                Level::Info,
                format!("copied {what} ({chars} characters) to the clipboard"),
            ),
            Ok(Copied::File { path, why }) => self.transcript.notice(
                Level::Info,
                format!("{what} written to {} ({why})", path.display()),
            ),
            Err(e) => self
                .transcript
                .notice(Level::Error, format!("could not copy {what}: {e}")),
        }
    }

    /// The outcome of applying or saving the patch.
    pub fn on_patch_done(&mut self, result: Result<PatchDecision, ActionError>) {
        match result {
            Ok(decision) => {
                let text = match &decision {
                    PatchDecision::Applied { repo } => {
                        format!("✔ patch applied to {}", repo.display())
                    }
                    PatchDecision::Saved { path } => format!("✔ patch saved to {}", path.display()),
                    PatchDecision::Discarded => "patch discarded".into(),
                    PatchDecision::Empty | PatchDecision::Undecided => String::new(),
                };
                let next = self.follow_up_hint();
                self.transcript
                    .notice(Level::Info, format!("{text}. {next}"));
                self.patch = decision;
                self.mode = Mode::Transcript;
            }
            Err(e) => self
                .transcript
                .notice(Level::Error, format!("the patch was not applied: {e}")),
        }
    }

    /// Whether quitting now loses work.
    fn quit_question(&self) -> Option<String> {
        if self.replay.is_some() {
            return None;
        }
        if self.status.state.is_busy() {
            return Some("The agent is working. Quit and end the session?".into());
        }
        if matches!(self.mode, Mode::Patch(_)) && self.patch == PatchDecision::Undecided {
            return Some("The session patch is not applied or saved. Quit and lose it?".into());
        }
        None
    }

    /// The effects of quitting now.
    pub(crate) fn quit_now(&mut self) -> Vec<Effect> {
        self.quitting = true;
        let mut fx = Vec::new();
        if self.replay.is_none() {
            fx.push(Effect::Send(Op::Shutdown));
        }
        fx.push(Effect::Quit);
        fx
    }
}

/// An error and its sources, joined by `: `; a source whose text the message already holds (an
/// error that prints its source itself) is said once.
fn with_sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let said = e.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::with_sources;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("opening the log")]
        Quiet(#[source] std::io::Error),
        #[error("opening the log: {0}")]
        Says(#[source] std::io::Error),
    }

    #[test]
    fn a_startup_error_is_said_with_its_sources_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        assert_eq!(
            with_sources(&Outer::Quiet(io())),
            "opening the log: no such file"
        );
        assert_eq!(
            with_sources(&Outer::Says(io())),
            "opening the log: no such file"
        );
    }
}
