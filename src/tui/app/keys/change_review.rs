//! A file change under review: approve it (all of it, the selected hunks, with the reason the
//! others were dropped, or every further edit too), reject it with the reason, select hunks,
//! move the line cursor and comment on lines, open what is folded, edit it in $EDITOR, copy
//! it. The cursor and hunk state are `ChangeReview`'s (`app/review.rs`).

use super::super::review::{ChangeVerdict, FeedbackFor};
use super::super::{App, Effect, Mode, Review};
use super::toward;
use crate::protocol::ReviewDecision;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;

impl App {
    /// An action while a file change is under review.
    pub(super) fn act_change(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        let Mode::Review(Review::Change(c)) = &mut self.mode else {
            return Vec::new();
        };
        let id = c.req.id;
        match action {
            A::Submit if c.feedback_for == FeedbackFor::Comment => {
                let text = c.feedback.take().map(|mut f| f.take()).unwrap_or_default();
                c.comment(&text);
                Vec::new()
            }
            A::Comment => {
                c.start_comment();
                Vec::new()
            }
            A::Submit if c.feedback_for == FeedbackFor::DroppedHunks => {
                let text = c.feedback.take().map(|mut f| f.take());
                match c.approve(text) {
                    ChangeVerdict::Send(d) => self.decide(id, d),
                    ChangeVerdict::AskWhy => Vec::new(),
                }
            }
            A::Submit => {
                let text = c.feedback.take().map(|mut f| f.take()).unwrap_or_default();
                let text = c.rejection(&text);
                self.reject_with(id, text)
            }
            A::Cancel => {
                c.feedback = None;
                Vec::new()
            }
            A::Reject => {
                c.feedback_for = FeedbackFor::Rejection;
                c.feedback = Some(TextInput::default());
                Vec::new()
            }
            // With line comments, as with an edit or some hunks: the approval says them and
            // further edits are still asked about.
            A::ApproveForSession if c.revision > 0 || c.is_partial() || !c.comments.is_empty() => {
                match c.approve(None) {
                    ChangeVerdict::Send(d) => self.decide(id, d),
                    ChangeVerdict::AskWhy => Vec::new(),
                }
            }
            A::ApproveForSession => self.decide(id, ReviewDecision::ApproveForSession),
            A::ApprovePartly if c.is_partial() => {
                c.feedback_for = FeedbackFor::DroppedHunks;
                c.feedback = Some(TextInput::default());
                Vec::new()
            }
            A::Approve | A::ApprovePartly => match c.approve(None) {
                ChangeVerdict::Send(d) => self.decide(id, d),
                ChangeVerdict::AskWhy => {
                    c.feedback_for = FeedbackFor::Rejection;
                    c.feedback = Some(TextInput::default());
                    Vec::new()
                }
            },
            A::Unfold => {
                c.unfold();
                Vec::new()
            }
            A::ToggleHunk => {
                c.toggle_focused();
                Vec::new()
            }
            A::NextHunk | A::PrevHunk => {
                c.move_focus(toward(action, A::NextHunk));
                Vec::new()
            }
            A::ScrollUp | A::ScrollDown => {
                c.move_line(if action == A::ScrollUp { -1 } else { 1 });
                Vec::new()
            }
            A::PageUp | A::PageDown => {
                let p = c.page.get().max(1) as isize;
                c.move_line(if action == A::PageUp { -p } else { p });
                Vec::new()
            }
            A::Copy => match &c.diff {
                Some(d) => vec![Effect::Copy {
                    what: format!("the change to {}", c.path),
                    text: d.unified(),
                }],
                None => Vec::new(),
            },
            A::OpenEditor => {
                let text = c.selected_text();
                c.opened = Some(text.clone());
                c.note = None;
                vec![Effect::OpenEditor {
                    id,
                    path: c.path.clone(),
                    text,
                }]
            }
            _ => Vec::new(),
        }
    }
}
