//! A change or a command under review: the decision keys (approve, for the session, reject
//! with feedback, some hunks, a command rule), the line cursor, comments, copying and the
//! editor. The docked panel's own keys (focus, full screen, split) are `app/dock.rs`'.

use super::super::review::{ChangeVerdict, FeedbackFor};
use super::super::{App, Effect, Mode, Review};
use super::toward;
use crate::protocol::ReviewDecision;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;

impl App {
    pub(super) fn act_review(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        let Mode::Review(review) = &mut self.mode else {
            return Vec::new();
        };
        let id = review.request().id;
        match (action, review) {
            (A::Submit, Review::Command(c)) if c.prefix.is_some() => {
                let prefix = c.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                self.decide(id, ReviewDecision::ApprovePrefix { prefix })
            }
            (A::SaveRule, Review::Command(c)) => {
                let prefix = c.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                let mut fx = vec![Effect::SaveRule {
                    prefix: prefix.clone(),
                }];
                fx.extend(self.decide(id, ReviewDecision::ApprovePrefix { prefix }));
                fx
            }
            (A::Fewer | A::More, Review::Command(c)) => {
                if let Some(p) = c.prefix.as_mut() {
                    p.grow(toward(action, A::More));
                }
                Vec::new()
            }
            (A::Cancel, Review::Command(c)) if c.prefix.is_some() => {
                c.prefix = None;
                Vec::new()
            }
            (A::ChoosePrefix, Review::Command(c)) => {
                c.choose_prefix();
                Vec::new()
            }
            (A::Submit, Review::Change(c)) if c.feedback_for == FeedbackFor::Comment => {
                let text = c.feedback.take().map(|mut f| f.take()).unwrap_or_default();
                c.comment(&text);
                Vec::new()
            }
            (A::Comment, Review::Change(c)) => {
                c.start_comment();
                Vec::new()
            }
            (A::Submit, Review::Change(c)) if c.feedback_for == FeedbackFor::DroppedHunks => {
                let text = c.feedback.take().map(|mut f| f.take());
                match c.approve(text) {
                    ChangeVerdict::Send(d) => self.decide(id, d),
                    ChangeVerdict::AskWhy => Vec::new(),
                }
            }
            (A::Submit, r) => {
                let mut text = r
                    .feedback_mut()
                    .take()
                    .map(|mut f| f.take())
                    .unwrap_or_default();
                if let Review::Change(c) = r {
                    text = c.rejection(&text);
                }
                let feedback = if text.trim().is_empty() {
                    "The user rejected this without comment.".to_string()
                } else {
                    text
                };
                self.decide(id, ReviewDecision::Reject { feedback })
            }
            (A::Cancel, r) => {
                *r.feedback_mut() = None;
                Vec::new()
            }
            (A::Reject, r) => {
                if let Review::Change(c) = r {
                    c.feedback_for = FeedbackFor::Rejection;
                }
                *r.feedback_mut() = Some(TextInput::default());
                Vec::new()
            }
            // The person's own version runs, never the one they changed.
            (A::ApproveForSession, Review::Command(c)) if c.is_edited() => {
                let d = c.approve();
                self.decide(id, d)
            }
            // With line comments, as with an edit or some hunks: the approval says them and
            // further edits are still asked about.
            (A::ApproveForSession, Review::Change(c))
                if c.revision > 0 || c.is_partial() || !c.comments.is_empty() =>
            {
                match c.approve(None) {
                    ChangeVerdict::Send(d) => self.decide(id, d),
                    ChangeVerdict::AskWhy => Vec::new(),
                }
            }
            (A::ApproveForSession, _) => self.decide(id, ReviewDecision::ApproveForSession),
            (A::Approve, Review::Command(c)) => {
                let d = c.approve();
                self.decide(id, d)
            }
            (A::ApprovePartly, Review::Change(c)) if c.is_partial() => {
                c.feedback_for = FeedbackFor::DroppedHunks;
                c.feedback = Some(TextInput::default());
                Vec::new()
            }
            (A::Approve | A::ApprovePartly, Review::Change(c)) => match c.approve(None) {
                ChangeVerdict::Send(d) => self.decide(id, d),
                ChangeVerdict::AskWhy => {
                    c.feedback_for = FeedbackFor::Rejection;
                    c.feedback = Some(TextInput::default());
                    Vec::new()
                }
            },
            (A::Unfold, Review::Change(c)) => {
                c.unfold();
                Vec::new()
            }
            (A::ToggleHunk, Review::Change(c)) => {
                c.toggle_focused();
                Vec::new()
            }
            (A::NextHunk | A::PrevHunk, Review::Change(c)) => {
                c.move_focus(toward(action, A::NextHunk));
                Vec::new()
            }
            (A::ScrollUp | A::ScrollDown, Review::Change(c)) => {
                c.move_line(if action == A::ScrollUp { -1 } else { 1 });
                Vec::new()
            }
            (A::PageUp | A::PageDown, Review::Change(c)) => {
                let p = c.page.get().max(1) as isize;
                c.move_line(if action == A::PageUp { -p } else { p });
                Vec::new()
            }
            (A::Copy, Review::Change(c)) => match &c.diff {
                Some(d) => vec![Effect::Copy {
                    what: format!("the change to {}", c.path),
                    text: d.unified(),
                }],
                None => Vec::new(),
            },
            (A::Copy, Review::Command(c)) => vec![Effect::Copy {
                what: "the command".into(),
                text: c.command.clone(),
            }],
            (A::OpenEditor, Review::Change(c)) => {
                let text = c.selected_text();
                c.opened = Some(text.clone());
                c.note = None;
                vec![Effect::OpenEditor {
                    id,
                    path: c.path.clone(),
                    text,
                }]
            }
            (A::OpenEditor, Review::Command(c)) => {
                c.opened = Some(c.command.clone());
                c.note = None;
                vec![Effect::OpenEditor {
                    id,
                    path: "command.sh".into(),
                    text: format!("{}\n", c.command),
                }]
            }
            _ => Vec::new(),
        }
    }
}
