//! The transcript's keys: sending the message (or `!cmd`), scrolling, selecting and opening
//! items, reasoning shown or not, step mode, the session patch, rewind and replay steps.

use super::super::{AgentState, App, Effect, Overlay};
use super::toward;
use crate::protocol::Op;
use crate::tui::keymap::Action;
use crate::tui::transcript::Level;
use crate::tui::Direction;

impl App {
    pub(in crate::tui::app) fn act_transcript(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Newline
            | A::HistoryPrev
            | A::HistoryNext
            | A::DeleteWordBack
            | A::KillToLineEnd
            | A::WordLeft
            | A::WordRight
            | A::LineStart
            | A::LineEnd
            | A::EditDraft
            | A::SearchHistory => self.act_composer(action),
            A::EscapeOrRewind => self.escape_or_rewind(),

            A::Submit => {
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
                    // The runner holds it until the session is ready, then sends it like any
                    // other message (after the task given on the command line, if any).
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
                // While the agent works or is paused, the agent queues the message for the
                // next turn boundary (and says so with `MessageQueued`).
                self.take_message(&text);
                vec![Effect::Send(Op::UserMessage { text })]
            }
            A::Cancel => {
                self.input_focus = false;
                Vec::new()
            }
            A::Search => self.start_search(),
            A::Copy => match self.transcript.copy_text() {
                Some((what, text)) => vec![Effect::Copy { what, text }],
                None => {
                    self.transcript
                        .notice(Level::Info, "nothing to copy: select an item with Tab");
                    Vec::new()
                }
            },
            A::FocusInput => {
                if self.replay.is_some() {
                    return Vec::new();
                }
                self.input_focus = true;
                Vec::new()
            }
            A::Interrupt => {
                if self.status.state.is_busy() && self.replay.is_none() {
                    self.transcript.notice(Level::Warning, "interrupting…");
                    return vec![Effect::Send(Op::Interrupt)];
                }
                Vec::new()
            }
            A::ToggleStepMode if self.replay.is_none() => {
                self.status.step_mode = !self.status.step_mode;
                vec![Effect::Send(Op::SetStepMode {
                    on: self.status.step_mode,
                })]
            }
            A::StepOnce if self.status.state == AgentState::Paused => {
                self.status.state = AgentState::Generating;
                vec![Effect::Send(Op::Step)]
            }
            A::ShowPatch => {
                if self.options.has_patch && self.replay.is_none() {
                    return vec![Effect::ExportPatch];
                }
                Vec::new()
            }
            A::ScrollUp => self.scroll(-1),
            A::ScrollDown => self.scroll(1),
            A::PageUp => {
                self.transcript.page(Direction::Back);
                Vec::new()
            }
            A::PageDown => {
                self.transcript.page(Direction::Forward);
                Vec::new()
            }
            A::Top => {
                self.transcript.to_top();
                Vec::new()
            }
            A::Bottom => {
                self.transcript.to_bottom();
                Vec::new()
            }
            A::NextItem | A::PrevItem => {
                let ctx = self.render_ctx_owned();
                self.transcript
                    .select(toward(action, A::NextItem), &ctx.as_ctx());
                Vec::new()
            }
            A::ToggleItem => {
                let ctx = self.render_ctx_owned();
                self.transcript.toggle_selected(&ctx.as_ctx());
                Vec::new()
            }
            A::ToggleReasoning => {
                self.reasoning = self.reasoning.next();
                self.bump_epoch();
                let ctx = self.render_ctx_owned();
                self.transcript.unselect_hidden(&ctx.as_ctx());
                Vec::new()
            }
            A::Rewind => self.open_rewind(),
            A::ReplayNext => self.replay_step(Direction::Forward),
            A::ReplayPrev => self.replay_step(Direction::Back),
            A::ReplayEnd => {
                let mut fx = Vec::new();
                while let Some(more) = self.replay_advance() {
                    fx.extend(more);
                }
                fx
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn scroll(&mut self, d: isize) -> Vec<Effect> {
        self.transcript.scroll_by(d);
        Vec::new()
    }

    pub(super) fn render_ctx_owned(&self) -> OwnedCtx {
        OwnedCtx {
            theme: self.theme.clone(),
            hl: self.hl.clone(),
            reasoning: self.reasoning,
            epoch: self.epoch,
        }
    }
}

/// The command of a message `!cmd` (`!` and a command, on one line or more), if it is one.
pub(super) fn shell_command(text: &str) -> Option<String> {
    let command = text.strip_prefix('!')?.trim();
    (!command.is_empty()).then(|| command.to_string())
}

/// A render context that owns its parts, for transcript calls made while `self` is borrowed.
pub(super) struct OwnedCtx {
    theme: crate::tui::theme::Theme,
    hl: crate::diff::Highlighter,
    reasoning: crate::tui::ReasoningView,
    epoch: u64,
}

impl OwnedCtx {
    pub(super) fn as_ctx(&self) -> crate::tui::transcript::RenderCtx<'_> {
        crate::tui::transcript::RenderCtx {
            theme: &self.theme,
            hl: &self.hl,
            reasoning: self.reasoning,
            epoch: self.epoch,
        }
    }
}
