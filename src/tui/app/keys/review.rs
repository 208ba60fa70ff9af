//! A change or a command under review: which of the two handlers takes an action
//! (`change_review`, `command_review`), and the end both share, a rejection with the person's
//! words. The docked panel's own keys (focus, full screen, split) are `app/dock.rs`'.

use super::super::{App, Effect, Mode, Review};
use crate::protocol::{RequestId, ReviewDecision};
use crate::tui::keymap::Action;

impl App {
    pub(super) fn act_review(&mut self, action: Action) -> Vec<Effect> {
        match &self.mode {
            Mode::Review(Review::Change(_)) => self.act_change(action),
            Mode::Review(Review::Command(_)) => self.act_command(action),
            _ => Vec::new(),
        }
    }

    /// Reject request `id` with the person's words (or say there were none).
    pub(super) fn reject_with(&mut self, id: RequestId, text: String) -> Vec<Effect> {
        let feedback = if text.trim().is_empty() {
            "The user rejected this without comment.".to_string()
        } else {
            text
        };
        self.decide(id, ReviewDecision::Reject { feedback })
    }
}
