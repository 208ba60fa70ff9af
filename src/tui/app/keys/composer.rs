//! The message line's keys ([`Composer`]): sending (a message, or `!cmd`), pastes (long ones
//! folded), the history of messages sent and its search (Ctrl-R, [`RecallKeys`]), word and
//! line motions, the draft in $EDITOR, and Esc on it (interrupt, or twice on an empty line:
//! rewind). With the message line in front, the transcript's keys still work through it.

use super::super::{AgentState, App, Effect, Mode, Overlay};
use super::transcript::TranscriptKeys;
use super::FOLD_LINES;
use crate::protocol::Op;
use crate::tui::keymap::{Action, Context};
use crate::tui::text_input::clean_paste;
use crate::tui::transcript::Level;
use crate::tui::Direction;

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
                    while self.pastes.iter().any(|(l, _)| *l == label) {
                        n += 1;
                        label = format!("[pasted {lines} lines #{n}]");
                    }
                    self.input.insert_str(&label);
                    self.pastes.push((label, text));
                } else {
                    self.input.insert_str(&text);
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
                    self.recall_step(false);
                }
            }
            _ => {}
        }
        self.refresh_pickers();
    }

    /// Backspace right after a folded paste's label deletes the label (and the paste) whole.
    pub(super) fn delete_folded_paste(&mut self) -> bool {
        let before = self.input.before_cursor();
        let Some(i) = self
            .pastes
            .iter()
            .position(|(l, _)| before.ends_with(l.as_str()))
        else {
            return false;
        };
        let (label, _) = self.pastes.remove(i);
        self.input.delete_back(label.chars().count());
        true
    }

    /// The message as it is sent: the line's text with each folded paste put back whole.
    pub(in crate::tui::app) fn message_text(&self) -> String {
        let mut text = self.input.text().to_string();
        for (label, pasted) in &self.pastes {
            if let Some(at) = text.find(label.as_str()) {
                text.replace_range(at..at + label.len(), pasted);
            }
        }
        text
    }

    /// The message line is sent (or handed on): empty it, and keep the text in the history.
    pub(super) fn take_message(&mut self, text: &str) {
        self.input.take();
        self.pastes.clear();
        self.input_focus = false;
        self.sent.push(text);
    }

    /// Up or Down on the message line: the line above or below, or from the first (last)
    /// line the previous (next) message of the history.
    pub(super) fn line_or_history(&mut self, to: Direction) {
        if self.input.line_move(to) {
            return;
        }
        let recalled = match to {
            Direction::Back => {
                let current = self.input.text().to_string();
                self.sent.back(&current).map(str::to_string)
            }
            Direction::Forward => self.sent.forward(),
        };
        let Some(text) = recalled else {
            return;
        };
        self.pastes.clear();
        self.input.set_text(&text);
        if to == Direction::Back {
            // On the first line, so that Up goes on to the older message.
            self.input.to_first_line_end();
        }
    }

    /// Search the messages sent again for what is typed: from the newest, or (`older`) from
    /// before the one found. The message line shows the message found, or the draft when
    /// none matches.
    pub(super) fn recall_step(&mut self, older: bool) {
        let Some(r) = self.recall.as_mut() else {
            return;
        };
        let before = match (older, r.found) {
            (true, Some(i)) => i,
            _ => self.sent.entries().len(),
        };
        match self.sent.find(r.query.text(), before) {
            Some(i) => {
                r.found = Some(i);
                let text = self.sent.entries()[i].clone();
                self.pastes.clear();
                self.input.set_text(&text);
            }
            // Ctrl-R past the oldest match keeps the one found.
            None if older => {}
            None => {
                r.found = None;
                let draft = r.draft.clone();
                self.input.set_text(&draft);
            }
        }
    }

    /// Enter (keep the message found on the line), Esc (the line as it was) or Ctrl-R (an
    /// older match) in a search of the messages sent.
    pub(super) fn recall_choice(&mut self, action: Action) {
        match action {
            Action::OlderMatch => self.recall_step(true),
            Action::Cancel => {
                if let Some(r) = self.recall.take() {
                    self.input.set_text(&r.draft);
                }
            }
            _ => self.recall = None,
        }
    }

    /// The editor opened with Ctrl-G is closed: what was saved is the message line's text
    /// (the file's last line end dropped), or on failure the line stays as it was.
    pub fn on_draft_edited(&mut self, result: Result<String, crate::tui::actions::ActionError>) {
        match result {
            Ok(text) => {
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                self.pastes.clear();
                self.input.set_text(text);
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
            self.esc_armed = false;
            return TranscriptKeys(self).handle(Action::Interrupt);
        }
        if !self.input.text().is_empty() {
            self.esc_armed = false;
            return Vec::new();
        }
        if std::mem::take(&mut self.esc_armed) {
            return self.open_rewind();
        }
        self.esc_armed = true;
        Vec::new()
    }
}

/// The message line in front (focused in the modal keys, or the chat keys' transcript).
pub(super) struct Composer<'a>(pub(super) &'a mut App);

impl Composer<'_> {
    /// The message line's own keys; any other action is the transcript's.
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        use Action as A;
        let app = self.0;
        match action {
            A::Newline => app.input.newline(),
            A::HistoryPrev => app.line_or_history(Direction::Back),
            A::HistoryNext => app.line_or_history(Direction::Forward),
            A::DeleteWordBack => app.input.delete_word_back(),
            A::KillToLineEnd => app.input.kill_to_line_end(),
            A::WordLeft => app.input.word_left(),
            A::WordRight => app.input.word_right(),
            A::LineStart => app.input.line_start(),
            A::LineEnd => app.input.line_end(),
            A::SearchHistory => {
                app.recall = Some(crate::tui::history::Recall {
                    draft: app.input.text().to_string(),
                    ..Default::default()
                });
                app.recall_step(false);
            }
            A::EditDraft => return vec![Effect::EditDraft(app.message_text())],
            A::EscapeOrRewind => return app.escape_or_rewind(),
            A::Submit => return app.send_message(),
            A::Cancel => app.input_focus = false,
            _ => return TranscriptKeys(app).handle(action),
        }
        Vec::new()
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
                self.0.recall_choice(action);
                Vec::new()
            }
            _ => Composer(self.0).handle(action),
        }
    }
}

impl App {
    /// Enter on the message line: send the message (or run `!cmd`), or hold it until the
    /// session has started or the person has chosen how to make room in a full context.
    pub(in crate::tui::app) fn send_message(&mut self) -> Vec<Effect> {
        if self.input.text().trim().is_empty() {
            return Vec::new();
        }
        let text = self.message_text().trim().to_string();
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
