//! Keys to actions (through the one key table, `tui/keymap`) and the routing of each action
//! to the handler of the mode in force ([`App::act`]), one type with its own `handle` in one
//! file each: the message line (`composer`: [`composer::ComposerKeys`], and the search of the
//! messages sent, [`composer::RecallKeys`]), the transcript (`transcript`, with `replay`'s
//! steps), the command palette (`palette`), the file picker (`path_picker`), the transcript
//! search (`search`), the help and the questions over everything (`overlays`), a file change
//! (`change_review`: `ChangeReview::handle`) or a command (`command_review`:
//! `CommandReview::handle`) under review (`review` picks one; the docked panel's keys are
//! `app/dock.rs`'), the session review (`PatchReview::handle`, its effects in
//! `app/pr_keys.rs`); the keys that work whatever is in front are `session`'s.
//!
//! Owns which contexts are in force ([`App::contexts`]) and which mode's handler a context's
//! actions go to; not what any one mode does with them.

mod change_review;
mod command_review;
mod composer;
mod overlays;
mod palette;
mod path_picker;
mod replay;
mod review;
mod search;
mod session;
mod transcript;

use super::review::FeedbackFor;
use super::{App, Effect, Mode, Overlay, Review};
use crate::tui::keymap::{lookup, Action, Context};
use crate::tui::text_input::TextInput;
use crate::tui::Direction;
use composer::{ComposerKeys, RecallKeys};
use crossterm::event::KeyEvent;
use overlays::{HelpKeys, Questions};
use palette::PaletteKeys;
use path_picker::PathPickerKeys;
use search::SearchKeys;
use transcript::TranscriptKeys;

/// Lines one notch of the mouse wheel scrolls.
pub(crate) const WHEEL_LINES: usize = 3;

/// A paste of more lines than this is shown folded on the message line.
pub const FOLD_LINES: usize = 10;

impl App {
    /// The contexts keys are looked up in now, most specific first.
    pub fn contexts(&self) -> Vec<Context> {
        use Context as C;
        match &self.overlay {
            Some(Overlay::Help) => return vec![C::Help, C::Anywhere],
            Some(Overlay::ConfirmQuit(_)) => return vec![C::Confirm, C::Anywhere],
            Some(Overlay::ContextFull(_)) => return vec![C::ContextChoice, C::Anywhere],
            Some(Overlay::Rewind { .. }) => return vec![C::Rewind, C::Anywhere],
            None => {}
        }
        match &self.mode {
            Mode::Review(Review::Change(c))
                if c.feedback.is_some() && c.feedback_for == FeedbackFor::Comment =>
            {
                vec![C::Comment, C::Anywhere]
            }
            Mode::Review(Review::Change(c)) if c.feedback.is_some() => {
                vec![C::Feedback, C::Anywhere]
            }
            Mode::Review(Review::Command(c)) if c.feedback.is_some() => {
                vec![C::Feedback, C::Anywhere]
            }
            Mode::Review(Review::Command(c)) if c.prefix.is_some() => vec![C::Prefix, C::Anywhere],
            Mode::Review(Review::Change(c))
                if c.folded().is_some() || c.gap_at_cursor().is_some() =>
            {
                vec![C::Folded, C::Diff, C::Browse, C::Anywhere]
            }
            Mode::Review(Review::Change(_)) => vec![C::Diff, C::Browse, C::Anywhere],
            Mode::Review(Review::Command(_)) => vec![C::Command, C::Browse, C::Anywhere],
            Mode::Patch(p) => p.contexts(),
            Mode::Transcript if self.search.as_ref().is_some_and(|s| s.field.is_some()) => {
                vec![C::Search, C::Anywhere]
            }
            Mode::Transcript if self.message_line_open() && self.composer.recall.is_some() => {
                vec![C::HistorySearch, C::Anywhere]
            }
            Mode::Transcript if self.message_line_open() && self.picker.is_some() => {
                vec![C::PathPicker, C::Input, C::Anywhere]
            }
            Mode::Transcript if self.message_line_open() && self.palette.is_some() => {
                vec![C::Palette, C::Input, C::Anywhere]
            }
            Mode::Transcript if self.chat_in_front() => vec![C::Chat, C::Input, C::Anywhere],
            Mode::Transcript if self.input_focus => vec![C::Input, C::Anywhere],
            Mode::Transcript if self.search.is_some() && self.replay.is_some() => {
                vec![C::Found, C::Replay, C::Transcript, C::Browse, C::Anywhere]
            }
            Mode::Transcript if self.search.is_some() => {
                vec![C::Found, C::Transcript, C::Browse, C::Anywhere]
            }
            Mode::Transcript if self.replay.is_some() => {
                vec![C::Replay, C::Transcript, C::Browse, C::Anywhere]
            }
            Mode::Transcript => vec![C::Transcript, C::Browse, C::Anywhere],
        }
    }

    /// Whether the message line is in front in the default (chat) keys: no review, patch,
    /// overlay, search or replay.
    pub fn chat_in_front(&self) -> bool {
        self.keys == crate::tui::KeyScheme::Chat
            && self.overlay.is_none()
            && matches!(self.mode, Mode::Transcript)
            && self.replay.is_none()
            && self.search.is_none()
    }

    /// Whether keys type on the message line now (focused in the modal keys, or in front in
    /// the chat keys).
    pub fn message_line_open(&self) -> bool {
        self.input_focus || self.chat_in_front()
    }

    /// The mouse wheel: [`WHEEL_LINES`] lines of the view in front (the help, the session
    /// patch, else the transcript: during a change's review, the conversation above it, as
    /// [`App::on_wheel_at`] does off the panel), through the same scroll actions as the keys.
    pub fn on_wheel(&mut self, to: Direction) -> Vec<Effect> {
        use Context as C;
        let action = match to {
            Direction::Back => Action::ScrollUp,
            Direction::Forward => Action::ScrollDown,
        };
        let ctx = match (&self.overlay, &self.mode) {
            (Some(Overlay::Help), _) => C::Help,
            (Some(_), _) => return Vec::new(),
            (None, Mode::Review(Review::Change(_))) => {
                self.wheel_in_dock(to, None);
                return Vec::new();
            }
            (None, Mode::Patch(_)) => C::Patch,
            (None, _) => C::Transcript,
        };
        // The wheel scrolls a diff; its keys move the line cursor, which the view follows.
        let d = WHEEL_LINES as isize;
        let d = if to == Direction::Back { -d } else { d };
        match &mut self.mode {
            Mode::Patch(p) if ctx == C::Patch => {
                p.scroll_by(d);
                return Vec::new();
            }
            _ => {}
        }
        if !crate::tui::keymap::binds(ctx, action) {
            return Vec::new();
        }
        let mut fx = Vec::new();
        for _ in 0..WHEEL_LINES {
            fx.extend(match ctx {
                C::Transcript => TranscriptKeys(self).handle(action),
                _ => self.act(action, ctx),
            });
        }
        fx
    }

    /// A key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let contexts = self.contexts();
        let action = lookup(&contexts, &key);
        if action != Some(Action::EscapeOrRewind) {
            self.composer.esc_armed = false;
        }
        if action != self.unsent_warned {
            self.unsent_warned = None;
        }
        match action {
            Some(action) => {
                let fx = self.act(action, contexts[0]);
                self.refresh_pickers();
                fx
            }
            None => {
                if matches!(contexts[0], Context::Input | Context::Chat)
                    && key.code == crossterm::event::KeyCode::Backspace
                    && key.modifiers.is_empty()
                    && self.composer.delete_folded_paste()
                {
                    return Vec::new();
                }
                let on_message_line = matches!(
                    contexts[0],
                    Context::Input | Context::Chat | Context::Palette | Context::PathPicker
                ) && self.composer.recall.is_none();
                let opens = on_message_line
                    .then(|| self.picker_opened_by(&key))
                    .flatten();
                if contexts[0].is_text_entry() {
                    if let Some(field) = self.text_field() {
                        field.handle(&key);
                    }
                }
                if contexts[0] == Context::HistorySearch {
                    self.composer.recall_step(false);
                }
                let fx = match opens {
                    Some(opens) => self.open_picker(opens),
                    None => Vec::new(),
                };
                self.refresh_pickers();
                fx
            }
        }
    }

    fn text_field(&mut self) -> Option<&mut TextInput> {
        match &mut self.mode {
            Mode::Review(r) => r.feedback_mut().as_mut(),
            Mode::Patch(p) => p.field_mut(),
            Mode::Transcript => {
                if let Some(r) = self.composer.recall.as_mut() {
                    return Some(&mut r.query);
                }
                match self.search.as_mut().and_then(|s| s.field.as_mut()) {
                    Some(f) => Some(f),
                    None => Some(&mut self.composer.input),
                }
            }
        }
    }

    /// Hand `action`, looked up in `ctx`, to the mode whose keys `ctx` holds; the keys that
    /// work anywhere (help, quit, suspend, the approval policy, export, the check) first.
    pub(in crate::tui::app) fn act(&mut self, action: Action, ctx: Context) -> Vec<Effect> {
        if let Some(fx) = self.act_anywhere(action) {
            return fx;
        }
        match Handler::of(ctx, &self.mode) {
            Handler::Help => HelpKeys(self).handle(action),
            Handler::Question => Questions(self).handle(action, ctx),
            Handler::Review => self.act_review(action, ctx),
            Handler::Patch => self.act_patch(action),
            Handler::Search => SearchKeys(self).handle(action),
            Handler::Recall => RecallKeys(self).handle(action),
            Handler::Palette => PaletteKeys(self).handle(action),
            Handler::PathPicker => PathPickerKeys(self).handle(action),
            Handler::Composer => ComposerKeys(self).handle(action),
            Handler::Transcript => TranscriptKeys(self).handle(action),
        }
    }
}

/// The mode whose handler takes the actions of a context, one file each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handler {
    /// The help overlay (`overlays`).
    Help,
    /// A question over everything: quit, the full context, rewind (`overlays`).
    Question,
    /// A change or a command under review, docked or full screen (`review`).
    Review,
    /// The session review (`app/pr_keys.rs`, `app/pr_review.rs`).
    Patch,
    /// The transcript search: its field, or its matches (`search`).
    Search,
    /// The search of the messages sent, Ctrl-R (`composer`).
    Recall,
    /// The command palette (`palette`).
    Palette,
    /// The file picker (`path_picker`).
    PathPicker,
    /// The message line (`composer`).
    Composer,
    /// The transcript, live or replayed (`transcript`).
    Transcript,
}

impl Handler {
    /// Whose keys `ctx` holds while `mode` is in front (the palette runs a command in its
    /// binding's context, whatever is in front).
    fn of(ctx: Context, mode: &Mode) -> Self {
        use Context as C;
        match ctx {
            C::Help => Handler::Help,
            C::Confirm | C::ContextChoice | C::Rewind => Handler::Question,
            C::Folded | C::Comment if matches!(mode, Mode::Patch(_)) => Handler::Patch,
            C::Diff | C::Folded | C::Command | C::Feedback | C::Comment | C::Prefix => {
                Handler::Review
            }
            C::Patch | C::SavePath | C::ReviewSummary => Handler::Patch,
            C::Search | C::Found => Handler::Search,
            C::HistorySearch => Handler::Recall,
            C::Palette => Handler::Palette,
            C::PathPicker => Handler::PathPicker,
            C::Chat | C::Input => Handler::Composer,
            C::Transcript | C::Replay | C::Browse | C::Anywhere => Handler::Transcript,
            // The attempts board answers its own keys (`attempts::Board::on_key`), and the
            // interface takes an attempt's way back to it before its App sees the key; an App
            // is never asked for them, and would do nothing with them.
            C::Board | C::Pieces | C::Attempt => Handler::Transcript,
        }
    }
}

/// The direction of one action of a next/previous pair: forward when it is `next`.
pub(super) fn toward(action: Action, next: Action) -> Direction {
    if action == next {
        Direction::Forward
    } else {
        Direction::Back
    }
}
