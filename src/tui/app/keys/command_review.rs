//! A command under review: run it, run it and every further command, a rule for the commands
//! that start like it (its words chosen with ← →, for the session or saved), reject it with
//! the reason, edit it in $EDITOR first, copy it.

use super::super::{App, Effect, Mode, Review};
use super::toward;
use crate::protocol::ReviewDecision;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;

impl App {
    /// An action while a command is under review.
    pub(super) fn act_command(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        let Mode::Review(Review::Command(c)) = &mut self.mode else {
            return Vec::new();
        };
        let id = c.req.id;
        match action {
            A::Submit if c.prefix.is_some() => {
                let prefix = c.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                self.decide(id, ReviewDecision::ApprovePrefix { prefix })
            }
            A::SaveRule => {
                let prefix = c.prefix.take().map(|p| p.prefix()).unwrap_or_default();
                let mut fx = vec![Effect::SaveRule {
                    prefix: prefix.clone(),
                }];
                fx.extend(self.decide(id, ReviewDecision::ApprovePrefix { prefix }));
                fx
            }
            A::Fewer | A::More => {
                if let Some(p) = c.prefix.as_mut() {
                    p.grow(toward(action, A::More));
                }
                Vec::new()
            }
            A::Cancel if c.prefix.is_some() => {
                c.prefix = None;
                Vec::new()
            }
            A::ChoosePrefix => {
                c.choose_prefix();
                Vec::new()
            }
            A::Submit => {
                let text = c.feedback.take().map(|mut f| f.take()).unwrap_or_default();
                self.reject_with(id, text)
            }
            A::Cancel => {
                c.feedback = None;
                Vec::new()
            }
            A::Reject => {
                c.feedback = Some(TextInput::default());
                Vec::new()
            }
            // The person's own version runs, never the one they changed.
            A::ApproveForSession if c.is_edited() => {
                let d = c.approve();
                self.decide(id, d)
            }
            A::ApproveForSession => self.decide(id, ReviewDecision::ApproveForSession),
            A::Approve => {
                let d = c.approve();
                self.decide(id, d)
            }
            A::Copy => vec![Effect::Copy {
                what: "the command".into(),
                text: c.command.clone(),
            }],
            A::OpenEditor => {
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
