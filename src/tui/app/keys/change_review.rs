//! A file change under review: approve it (all of it, the selected hunks, with the reason the
//! others were dropped, or every further edit too), reject it with the reason, select hunks,
//! move the line cursor and comment on lines, open what is folded, edit it in $EDITOR, copy
//! it. The cursor and hunk state are `ChangeReview`'s (`app/review.rs`).

use super::super::review::{ChangeReview, ChangeVerdict, FeedbackFor};
use super::super::{App, Effect, Mode, Review};
use super::review::Step;
use super::toward;
use crate::protocol::ReviewDecision;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;

impl App {
    /// An action while a file change is under review: the review's step, performed.
    pub(super) fn act_change(&mut self, action: Action) -> Vec<Effect> {
        let Mode::Review(Review::Change(c)) = &mut self.mode else {
            return Vec::new();
        };
        let id = c.req.id;
        let step = c.handle(action);
        self.perform_step(id, step)
    }
}

impl ChangeReview {
    /// What `action` does to the review, and what it asks of the session.
    pub(in crate::tui::app) fn handle(&mut self, action: Action) -> Step {
        use Action as A;
        let id = self.req.id;
        match action {
            A::Submit if self.feedback_for == FeedbackFor::Comment => {
                let text = self
                    .feedback
                    .take()
                    .map(|mut f| f.take())
                    .unwrap_or_default();
                self.comment(&text);
                Step::Nothing
            }
            A::Comment => {
                self.start_comment();
                Step::Nothing
            }
            A::Submit if self.feedback_for == FeedbackFor::DroppedHunks => {
                let text = self.feedback.take().map(|mut f| f.take());
                match self.approve(text) {
                    ChangeVerdict::Send(d) => Step::Decide(d),
                    ChangeVerdict::AskWhy => Step::Nothing,
                }
            }
            A::Submit => {
                let text = self
                    .feedback
                    .take()
                    .map(|mut f| f.take())
                    .unwrap_or_default();
                let text = self.rejection(&text);
                Step::Reject(text)
            }
            A::Cancel => {
                self.feedback = None;
                Step::Nothing
            }
            A::Reject => {
                self.feedback_for = FeedbackFor::Rejection;
                self.feedback = Some(TextInput::default());
                Step::Nothing
            }
            // With line comments, as with an edit or some hunks: the approval says them and
            // further edits are still asked about.
            A::ApproveForSession
                if self.revision > 0 || self.is_partial() || !self.comments.is_empty() =>
            {
                match self.approve(None) {
                    ChangeVerdict::Send(d) => Step::Decide(d),
                    ChangeVerdict::AskWhy => Step::Nothing,
                }
            }
            A::ApproveForSession => Step::Decide(ReviewDecision::ApproveForSession),
            A::ApprovePartly if self.is_partial() => {
                self.feedback_for = FeedbackFor::DroppedHunks;
                self.feedback = Some(TextInput::default());
                Step::Nothing
            }
            A::Approve | A::ApprovePartly => match self.approve(None) {
                ChangeVerdict::Send(d) => Step::Decide(d),
                ChangeVerdict::AskWhy => {
                    self.feedback_for = FeedbackFor::Rejection;
                    self.feedback = Some(TextInput::default());
                    Step::Nothing
                }
            },
            A::Unfold => {
                self.unfold();
                Step::Nothing
            }
            A::ToggleHunk => {
                self.toggle_focused();
                Step::Nothing
            }
            A::NextHunk | A::PrevHunk => {
                self.move_focus(toward(action, A::NextHunk));
                Step::Nothing
            }
            A::ScrollUp | A::ScrollDown => {
                self.move_line(if action == A::ScrollUp { -1 } else { 1 });
                Step::Nothing
            }
            A::PageUp | A::PageDown => {
                self.move_page(if action == A::PageUp { -1 } else { 1 });
                Step::Nothing
            }
            A::Copy => match &self.diff {
                Some(d) => Step::Effects(vec![Effect::Copy {
                    what: format!("the change to {}", self.path),
                    text: d.unified(),
                }]),
                None => Step::Nothing,
            },
            A::OpenEditor => {
                let text = self.selected_text();
                self.opened = Some(text.clone());
                self.note = None;
                Step::Effects(vec![Effect::OpenEditor {
                    id,
                    path: self.path.clone(),
                    text,
                }])
            }
            _ => Step::Nothing,
        }
    }
}
