//! The session review's ends as the App's effects: approving (apply, save, discard) with the
//! pending comments said to the model, requesting changes (one message; the agent goes on
//! from it), recording the comments, putting the review aside and taking it up again
//! (`/request`). The review's own state and keys are in `pr_review`.

use super::pr_review::{End, Outcome, PatchReview};
use super::{App, Effect, Mode, PatchDecision};
use crate::protocol::{Op, RecordedComment};
use crate::tui::keymap::{keys_of, Action, Context};
use crate::tui::text_input::TextInput;
use crate::tui::transcript::Level;

impl App {
    /// A key of the session review (or `/request`, from anywhere).
    pub(super) fn act_patch(&mut self, action: Action) -> Vec<Effect> {
        if !matches!(self.mode, Mode::Patch(_)) {
            return match action {
                Action::RequestChanges => self.resume_review(),
                _ => Vec::new(),
            };
        }
        let Mode::Patch(p) = &mut self.mode else {
            return Vec::new();
        };
        if action == Action::ToggleSplit {
            // As in a change's review: the layout is the interface's, `t` switches it.
            let one_sided = p.shown().is_some_and(|f| f.one_sided());
            self.diff_layout = self.diff_layout.toggled(p.cursor.width(), one_sided);
            return Vec::new();
        }
        match p.handle(action) {
            Outcome::Nothing => Vec::new(),
            Outcome::Apply => {
                let mut fx = vec![Effect::ApplyPatch(p.raw.clone())];
                fx.extend(self.send_approval_comments());
                fx
            }
            Outcome::AskSavePath => {
                let name = format!("lilypad-{}.patch", short_id(&self.status.session_id));
                let default = match &self.options.repo {
                    Some(r) => r.join(name),
                    None => name.into(),
                };
                p.field = Some((
                    super::pr_review::Field::SavePath,
                    TextInput::with_text(&default.display().to_string()),
                ));
                Vec::new()
            }
            Outcome::Save(path) => {
                let mut fx = vec![Effect::SavePatch {
                    path: path.into(),
                    bytes: p.raw.clone(),
                }];
                fx.extend(self.send_approval_comments());
                fx
            }
            Outcome::Discard => {
                let fx = self.send_approval_comments();
                self.on_patch_done(Ok(PatchDecision::Discarded));
                fx
            }
            Outcome::Copy => vec![Effect::Copy {
                what: "the session patch".into(),
                text: String::from_utf8_lossy(&p.raw).into_owned(),
            }],
            Outcome::Back => {
                if self.warn_unsent(Action::Cancel) != Unsent::Warned {
                    self.put_review_aside();
                }
                Vec::new()
            }
            Outcome::Request(text) => self.request_changes(text),
            // The session log keeps them; the transcript shows them when the agent says so.
            Outcome::Recorded(done) => vec![Effect::Send(Op::RecordComments {
                comments: done
                    .iter()
                    .map(|c| RecordedComment {
                        place: c.anchor.describe(),
                        text: c.text.clone(),
                    })
                    .collect(),
            })],
        }
    }

    /// Esc: back to the transcript; the review, its pending comments with it, waits.
    fn put_review_aside(&mut self) {
        if let Mode::Patch(p) = std::mem::replace(&mut self.mode, Mode::Transcript) {
            if !p.comments.is_empty() {
                let n = p.comments.pending().len();
                self.transcript.notice(
                    Level::Info,
                    format!(
                        "{n} pending review comment{} kept: {} takes the review up again",
                        if n == 1 { "" } else { "s" },
                        self.request_hint()
                    ),
                );
            }
            self.patch_memory.stash = Some(p);
        }
        self.input_focus = self.status.state.accepts_message();
    }

    /// How `/request` is reached with the keys in force.
    fn request_hint(&self) -> String {
        match self.keys {
            crate::tui::KeyScheme::Chat => "/request".into(),
            crate::tui::KeyScheme::Modal => format!(
                "{} then {}",
                keys_of(Context::Transcript, Action::ShowPatch),
                keys_of(Context::Patch, Action::RequestChanges)
            ),
        }
    }

    /// `/request` from the message line: the review put aside comes back, its summary field
    /// open.
    fn resume_review(&mut self) -> Vec<Effect> {
        match self.patch_memory.stash.take() {
            Some(mut p) => {
                p.start_summary(End::RequestChanges);
                self.input_focus = false;
                self.mode = Mode::Patch(p);
            }
            None => {
                let show = match self.keys {
                    crate::tui::KeyScheme::Chat => keys_of(Context::Chat, Action::ShowPatch),
                    crate::tui::KeyScheme::Modal => keys_of(Context::Transcript, Action::ShowPatch),
                };
                self.transcript.notice(
                    Level::Info,
                    format!("no session review to submit: {show} shows the session patch"),
                );
            }
        }
        Vec::new()
    }

    /// Request changes: the one message goes to the model and the agent goes on from it;
    /// the review waits aside (its viewed marks kept for the next export).
    fn request_changes(&mut self, text: String) -> Vec<Effect> {
        let state = self.status.state;
        let Mode::Patch(p) = &mut self.mode else {
            return Vec::new();
        };
        if !state.accepts_message() && !state.is_busy() {
            p.note = Some("the session is not running: the review cannot be sent".into());
            return Vec::new();
        }
        let n = p.comments.pending().len();
        p.comments.clear_pending();
        self.put_review_aside();
        self.transcript.notice(
            Level::Info,
            format!(
                "changes requested: {n} comment{} in one message to the model",
                if n == 1 { "" } else { "s" }
            ),
        );
        self.input_focus = false;
        vec![Effect::Send(Op::UserMessage { text })]
    }

    /// Approving (apply, save, discard) with pending comments: they go to the model as the
    /// next message.
    fn send_approval_comments(&mut self) -> Vec<Effect> {
        self.patch_memory.stash = None;
        let Mode::Patch(p) = &mut self.mode else {
            return Vec::new();
        };
        let Some(text) = p.comments.approval_message() else {
            return Vec::new();
        };
        p.comments.clear_pending();
        if !self.status.state.accepts_message() && !self.status.state.is_busy() {
            self.transcript.notice(
                Level::Warning,
                "the session is not running: your comments on the patch cannot be sent",
            );
            return Vec::new();
        }
        self.transcript
            .notice(Level::Info, "your comments on the patch go to the model");
        vec![Effect::Send(Op::UserMessage { text })]
    }

    /// A new export of the session patch: the review shows it, keeping the comments and
    /// viewed marks of the review it replaces (in front or put aside).
    pub(super) fn show_patch_review(&mut self, raw: Vec<u8>, files: Vec<crate::diff::FileDiff>) {
        let turn = self.patch_memory.exported(&files);
        let mut review = PatchReview::new(raw, files, turn);
        let old = match std::mem::replace(&mut self.mode, Mode::Transcript) {
            Mode::Patch(old) => Some(old),
            other => {
                self.mode = other;
                self.patch_memory.stash.take()
            }
        };
        if let Some(old) = old {
            review.carry(old);
        }
        self.input_focus = false;
        self.mode = Mode::Patch(review);
    }
}

/// What leaving with review comments not sent does now (see [`App::warn_unsent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsent {
    /// No comment is pending: leave as usual.
    None,
    /// The first press: warned, nothing more.
    Warned,
    /// The same key again after the warning: leave without asking more.
    Again,
}

impl App {
    /// Review comments not sent yet, in the session review in front or put aside.
    pub(super) fn unsent_comments(&self) -> usize {
        match &self.mode {
            Mode::Patch(p) => p.comments.pending().len(),
            _ => self
                .patch_memory
                .stash
                .as_ref()
                .map_or(0, |p| p.comments.pending().len()),
        }
    }

    /// Quitting (`action` Quit or Ctrl-C's) or leaving the session review (`Cancel`) with
    /// review comments not sent: the first press warns, saying what the second does, as an
    /// editor warns about unsaved changes; the same key again goes ahead.
    pub(super) fn warn_unsent(&mut self, action: Action) -> Unsent {
        let n = self.unsent_comments();
        if n == 0 || self.replay.is_some() {
            return Unsent::None;
        }
        if self.unsent_warned.take() == Some(action) {
            return Unsent::Again;
        }
        self.unsent_warned = Some(action);
        let key = self.key_now(action);
        let then = match action {
            Action::Cancel => "leaves, the comments kept pending",
            _ => "quits and loses them",
        };
        let comments = if n == 1 { "comment" } else { "comments" };
        match &mut self.mode {
            Mode::Patch(p) => {
                let request = keys_of(Context::Patch, Action::RequestChanges);
                let record = keys_of(Context::Patch, Action::CommentReview);
                p.note = Some(format!(
                    "{n} {comments} not sent ({request} request changes · {record} record) · {key} again {then}"
                ));
            }
            _ => {
                let request = self.request_hint();
                self.transcript.notice(
                    Level::Warning,
                    format!("{n} review {comments} not sent ({request} sends them) · {key} again {then}"),
                );
            }
        }
        Unsent::Warned
    }

    /// How `action` is reached now: its keys in the first context in force that binds it.
    fn key_now(&self, action: Action) -> String {
        self.contexts()
            .into_iter()
            .map(|ctx| keys_of(ctx, action))
            .find(|k| !k.is_empty())
            .unwrap_or_default()
    }
}

pub(super) fn short_id(id: &str) -> String {
    if id.is_empty() {
        "session".into()
    } else {
        id.chars().take(24).collect()
    }
}
