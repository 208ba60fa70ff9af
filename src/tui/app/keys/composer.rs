//! The message line's keys ([`ComposerKeys`]): sending (a message, or `!cmd`), pastes (long
//! ones folded), the draft in $EDITOR, Esc on it (interrupt, or twice on an empty line:
//! rewind), and the search of the messages sent (Ctrl-R, [`RecallKeys`]); its editing keys
//! (word and line motions, the history) are the state's own (`app/composer.rs`). With the
//! message line in front, the transcript's keys still work through it.

use super::super::{AgentState, App, Effect, Mode, Overlay};
use super::transcript::TranscriptKeys;
use super::FOLD_LINES;
use crate::protocol::Op;
use crate::tui::keymap::{Action, Context};
use crate::tui::text_input::clean_paste;
use crate::tui::transcript::Level;

impl App {
    /// A paste (bracketed paste: the terminal sends it whole). On the message line it keeps
    /// its lines, and one of more than [`FOLD_LINES`] lines is shown as `[pasted N lines]`
    /// (and sent whole); a one-line field (a file name, a search) takes it as one line. In
    /// the transcript it opens the message line, as typing `i` would.
    pub fn on_paste(&mut self, text: &str) {
        let text = clean_paste(text);
        if text.is_empty() {
            return;
        }
        let contexts = self.contexts();
        let accepts = self.replay.is_none()
            && self.overlay.is_none()
            && matches!(self.mode, Mode::Transcript)
            && self.search.as_ref().is_none_or(|s| s.field.is_none());
        if contexts[0] != Context::Input && accepts {
            self.input_focus = true;
        }
        match self.contexts()[0] {
            Context::Input | Context::Chat | Context::Palette | Context::PathPicker => {
                let lines = text.lines().count();
                if lines > FOLD_LINES {
                    let mut label = format!("[pasted {lines} lines]");
                    let mut n = 1;
                    while self.composer.pastes.iter().any(|(l, _)| *l == label) {
                        n += 1;
                        label = format!("[pasted {lines} lines #{n}]");
                    }
                    self.composer.input.insert_str(&label);
                    self.composer.pastes.push((label, text));
                } else {
                    self.composer.input.insert_str(&text);
                }
            }
            Context::Feedback | Context::Comment | Context::ReviewSummary => {
                if let Some(f) = self.text_field() {
                    f.insert_str(&text.replace('\n', " "));
                }
            }
            c if c.is_text_entry() => {
                if let Some(f) = self.text_field() {
                    f.insert_str(text.lines().next().unwrap_or_default());
                }
                if c == Context::HistorySearch {
                    self.composer.recall_step(false);
                }
            }
            _ => {}
        }
        self.refresh_pickers();
    }

    /// The message line is sent (or handed on): empty it, and keep the text in the history.
    pub(super) fn take_message(&mut self, text: &str) {
        self.composer.take(text);
        self.input_focus = false;
    }

    /// The editor opened with Ctrl-G is closed: what was saved is the message line's text
    /// (the file's last line end dropped), or on failure the line stays as it was.
    pub fn on_draft_edited(&mut self, result: Result<String, crate::tui::actions::ActionError>) {
        match result {
            Ok(text) => {
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                self.composer.pastes.clear();
                self.composer.input.set_text(text);
                if !self.chat_in_front() && matches!(self.mode, Mode::Transcript) {
                    self.input_focus = true;
                }
            }
            Err(e) => self.transcript.notice(
                Level::Warning,
                format!("the editor failed, the message is kept as it was: {e}"),
            ),
        }
    }

    /// Esc with the message line in front: interrupt the agent while it works; else on an
    /// empty line the first Esc arms and the second asks which turn to rewind to.
    pub(super) fn escape_or_rewind(&mut self) -> Vec<Effect> {
        if self.status.state.is_busy() {
            self.composer.esc_armed = false;
            return TranscriptKeys(self).handle(Action::Interrupt);
        }
        if !self.composer.input.text().is_empty() {
            self.composer.esc_armed = false;
            return Vec::new();
        }
        if std::mem::take(&mut self.composer.esc_armed) {
            return self.open_rewind();
        }
        self.composer.esc_armed = true;
        Vec::new()
    }
}

/// The message line in front (focused in the modal keys, or the chat keys' transcript).
pub(super) struct ComposerKeys<'a>(pub(super) &'a mut App);

impl ComposerKeys<'_> {
    /// The message line's own keys (its editing keys are `Composer::handle`'s); any other
    /// action is the transcript's.
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        let app = self.0;
        if app.composer.handle(action) {
            return Vec::new();
        }
        match action {
            Action::EditDraft => vec![Effect::EditDraft(app.composer.message_text())],
            Action::EscapeOrRewind => app.escape_or_rewind(),
            Action::Submit => app.send_message(),
            Action::Cancel => {
                app.input_focus = false;
                Vec::new()
            }
            _ => TranscriptKeys(app).handle(action),
        }
    }
}

/// The search of the messages sent (Ctrl-R) in front.
pub(super) struct RecallKeys<'a>(pub(super) &'a mut App);

impl RecallKeys<'_> {
    /// Keep the message found, go back to the draft, or find an older match; any other key
    /// is the message line's.
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        match action {
            Action::Submit | Action::Cancel | Action::OlderMatch => {
                self.0.composer.recall_choice(action);
                Vec::new()
            }
            _ => ComposerKeys(self.0).handle(action),
        }
    }
}

impl App {
    /// Enter on the message line: send the message (or run `!cmd`), or hold it until the
    /// session has started or the person has chosen how to make room in a full context.
    pub(in crate::tui::app) fn send_message(&mut self) -> Vec<Effect> {
        if self.composer.input.text().trim().is_empty() {
            return Vec::new();
        }
        let text = self.composer.message_text().trim().to_string();
        let state = self.status.state;
        if let Some(command) = shell_command(&text) {
            return self.run_shell(&text, command);
        }
        if self.context_full && state.accepts_message() {
            // Sent only once the person has chosen how to make room.
            self.take_message(&text);
            self.overlay = Some(Overlay::ContextFull(text));
            return Vec::new();
        }
        if state == AgentState::Starting {
            // The runner holds it until the session is ready, then sends it like any other
            // message (after the task given on the command line, if any).
            self.take_message(&text);
            self.transcript.notice(
                Level::Info,
                format!("queued until the session has started › {text}"),
            );
            return vec![Effect::Send(Op::UserMessage { text })];
        }
        if !state.accepts_message() && !state.is_busy() {
            self.transcript.notice(
                Level::Warning,
                "the session is not running: the message cannot be sent",
            );
            return Vec::new();
        }
        // While the agent works or is paused, the agent queues the message for the next turn
        // boundary (and says so with `MessageQueued`).
        self.take_message(&text);
        vec![Effect::Send(Op::UserMessage { text })]
    }
}

/// The command of a message `!cmd` (`!` and a command, on one line or more), if it is one.
pub(super) fn shell_command(text: &str) -> Option<String> {
    let command = text.strip_prefix('!')?.trim();
    (!command.is_empty()).then(|| command.to_string())
}
