//! The transcript's keys ([`TranscriptKeys`]): scrolling, selecting and opening items,
//! copying one, searching, reasoning shown or not, step mode, the session patch, rewind and
//! replay steps. Sending is the message line's (`composer`).

use super::super::{AgentState, App, Effect};
use super::toward;
use crate::protocol::Op;
use crate::tui::keymap::Action;
use crate::tui::transcript::Level;
use crate::tui::Direction;

/// The transcript in front, live or replayed (with the chat keys, behind the message line).
pub(in crate::tui::app) struct TranscriptKeys<'a>(pub(in crate::tui::app) &'a mut App);

impl TranscriptKeys<'_> {
    pub(in crate::tui::app) fn handle(self, action: Action) -> Vec<Effect> {
        use Action as A;
        let app = self.0;
        match action {
            A::Search => app.start_search(),
            A::Copy => match app.transcript.copy_text() {
                Some((what, text)) => vec![Effect::Copy { what, text }],
                None => {
                    app.transcript
                        .notice(Level::Info, "nothing to copy: select an item with Tab");
                    Vec::new()
                }
            },
            A::FocusInput => {
                if app.replay.is_some() {
                    return Vec::new();
                }
                app.input_focus = true;
                Vec::new()
            }
            A::Interrupt => {
                if app.status.state.is_busy() && app.replay.is_none() {
                    app.transcript.notice(Level::Warning, "interrupting…");
                    return vec![Effect::Send(Op::Interrupt)];
                }
                Vec::new()
            }
            A::ToggleStepMode if app.replay.is_none() => {
                app.status.step_mode = !app.status.step_mode;
                vec![Effect::Send(Op::SetStepMode {
                    on: app.status.step_mode,
                })]
            }
            A::StepOnce if app.status.state == AgentState::Paused => {
                app.status.state = AgentState::Generating;
                vec![Effect::Send(Op::Step)]
            }
            A::ShowPatch => {
                if app.options.has_patch && app.replay.is_none() {
                    return vec![Effect::ExportPatch];
                }
                Vec::new()
            }
            A::ScrollUp => app.scroll(-1),
            A::ScrollDown => app.scroll(1),
            A::PageUp => {
                app.transcript.page(Direction::Back);
                Vec::new()
            }
            A::PageDown => {
                app.transcript.page(Direction::Forward);
                Vec::new()
            }
            A::Top => {
                app.transcript.to_top();
                Vec::new()
            }
            A::Bottom => {
                app.transcript.to_bottom();
                Vec::new()
            }
            A::NextItem | A::PrevItem => {
                let ctx = app.render_ctx_owned();
                app.transcript
                    .select(toward(action, A::NextItem), &ctx.as_ctx());
                Vec::new()
            }
            A::ToggleItem => {
                let ctx = app.render_ctx_owned();
                app.transcript.toggle_selected(&ctx.as_ctx());
                Vec::new()
            }
            A::ToggleReasoning => {
                app.reasoning = app.reasoning.next();
                app.bump_epoch();
                let ctx = app.render_ctx_owned();
                app.transcript.unselect_hidden(&ctx.as_ctx());
                Vec::new()
            }
            A::Rewind => app.open_rewind(),
            A::ReplayNext => app.replay_step(Direction::Forward),
            A::ReplayPrev => app.replay_step(Direction::Back),
            A::ReplayEnd => {
                let mut fx = Vec::new();
                while let Some(more) = app.replay_advance() {
                    fx.extend(more);
                }
                fx
            }
            _ => Vec::new(),
        }
    }
}

impl App {
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
