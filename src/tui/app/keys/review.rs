//! A change or a command under review: which of the two handlers takes an action
//! (`ChangeReview::handle` in `change_review`, `CommandReview::handle` in `command_review`),
//! the [`Step`] each answers, and performing it (a decision sent, a rejection with the
//! person's words, a rule saved, effects). The docked panel's own keys (focus, full screen,
//! split) are `app/dock.rs`'.

use super::super::{App, Effect, Mode, Review};
use crate::protocol::{RequestId, ReviewDecision};
use crate::tui::keymap::{Action, Context};

/// What a review's key asks of the session, once the review has done its part.
#[derive(Debug)]
pub(in crate::tui::app) enum Step {
    Nothing,
    /// Send this decision.
    Decide(ReviewDecision),
    /// Reject with the person's words (empty: "without comment").
    Reject(String),
    /// Save a command rule for the repository and approve with it.
    SaveRule(String),
    /// Effects that need nothing more (copying, opening the editor).
    Effects(Vec<Effect>),
}

impl App {
    /// An action looked up in `ctx` while a change or a command is under review: the docked
    /// panel's own keys first (focus, full screen, split, scrolling the conversation), then
    /// the review's.
    pub(super) fn act_review(&mut self, action: Action, ctx: Context) -> Vec<Effect> {
        let docked = matches!(ctx, Context::Diff | Context::Folded | Context::Command);
        if docked && self.act_dock(action) {
            return Vec::new();
        }
        match &self.mode {
            Mode::Review(Review::Change(_)) => self.act_change(action),
            Mode::Review(Review::Command(_)) => self.act_command(action),
            _ => Vec::new(),
        }
    }

    /// Carry out a review's step for request `id`.
    pub(super) fn perform_step(&mut self, id: RequestId, step: Step) -> Vec<Effect> {
        match step {
            Step::Nothing => Vec::new(),
            Step::Decide(d) => self.decide(id, d),
            Step::Reject(text) => self.reject_with(id, text),
            Step::SaveRule(prefix) => {
                let mut fx = vec![Effect::SaveRule {
                    prefix: prefix.clone(),
                }];
                fx.extend(self.decide(id, ReviewDecision::ApprovePrefix { prefix }));
                fx
            }
            Step::Effects(fx) => fx,
        }
    }

    /// Reject request `id` with the person's words (or say there were none).
    fn reject_with(&mut self, id: RequestId, text: String) -> Vec<Effect> {
        let feedback = if text.trim().is_empty() {
            "The user rejected this without comment.".to_string()
        } else {
            text
        };
        self.decide(id, ReviewDecision::Reject { feedback })
    }
}
