//! A command under review: run it, run it and every further command, a rule for the commands
//! that start like it (its words chosen with ← →, for the session or saved), reject it with
//! the reason, edit it in $EDITOR first, copy it.

use super::super::review::CommandReview;
use super::super::{App, Effect, Mode, Review};
use super::review::Step;
use super::toward;
use crate::protocol::ReviewDecision;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;

impl App {
    /// An action while a command is under review: the review's step, performed.
    pub(super) fn act_command(&mut self, action: Action) -> Vec<Effect> {
        let Mode::Review(Review::Command(c)) = &mut self.mode else {
            return Vec::new();
        };
        let id = c.req.id;
        let step = c.handle(action);
        self.perform_step(id, step)
    }
}

impl CommandReview {
    /// What `action` does to the review, and what it asks of the session.
    pub(in crate::tui::app) fn handle(&mut self, action: Action) -> Step {
        use Action as A;
        let id = self.req.id;
        match action {
            A::Submit if self.prefix.is_some() => {
                let prefix = self.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                Step::Decide(ReviewDecision::ApprovePrefix { prefix })
            }
            A::SaveRule => {
                let prefix = self.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                Step::SaveRule(prefix)
            }
            A::Fewer | A::More => {
                if let Some(p) = self.prefix.as_mut() {
                    p.grow(toward(action, A::More));
                }
                Step::Nothing
            }
            A::Cancel if self.prefix.is_some() => {
                self.prefix = None;
                Step::Nothing
            }
            A::ChoosePrefix => {
                self.choose_prefix();
                Step::Nothing
            }
            A::Submit => {
                let text = self
                    .feedback
                    .take()
                    .map(|mut f| f.take())
                    .unwrap_or_default();
                Step::Reject(text)
            }
            A::Cancel => {
                self.feedback = None;
                Step::Nothing
            }
            A::Reject => {
                self.feedback = Some(TextInput::default());
                Step::Nothing
            }
            // The person's own version runs, never the one they changed.
            A::ApproveForSession if self.is_edited() => Step::Decide(self.approve()),
            A::ApproveForSession => Step::Decide(ReviewDecision::ApproveForSession),
            A::Approve => Step::Decide(self.approve()),
            A::Copy => Step::Effects(vec![Effect::Copy {
                what: "the command".into(),
                text: self.command.clone(),
            }]),
            A::OpenEditor => {
                self.opened = Some(self.command.clone());
                self.note = None;
                Step::Effects(vec![Effect::OpenEditor {
                    id,
                    path: "command.sh".into(),
                    text: format!("{}\n", self.command),
                }])
            }
            _ => Step::Nothing,
        }
    }
}
