//! Keys to actions (through the one key table, `tui/keymap`) and the dispatch of each action
//! to the handler of the mode in front, one file each: the message line (`composer`), the
//! transcript (`transcript`, `replay`), a file change (`change_review`) or a command
//! (`command_review`) under review (`review` picks one), the session's own questions and
//! commands (`session`); the session review answers in `app/pr_keys.rs`, the pickers in
//! `app/pickers.rs`, the search in `app/search.rs`.
//!
//! Owns which contexts are in force ([`App::contexts`]) and the routing of an action to its
//! handler ([`App::act`]); not what any one mode does with it.

mod change_review;
mod command_review;
mod composer;
mod replay;
mod review;
mod session;
mod transcript;

use super::review::FeedbackFor;
use super::pr_keys::Unsent;
use super::{App, Effect, Mode, Overlay, Review};
use crate::tui::keymap::{lookup, Action, Context};
use crate::tui::text_input::TextInput;
use crate::tui::transcript::Level;
use crate::tui::Direction;
use crossterm::event::KeyEvent;

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
            Mode::Transcript if self.message_line_open() && self.recall.is_some() => {
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
                C::Transcript => self.act_transcript(action),
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
            self.esc_armed = false;
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
                    && self.delete_folded_paste()
                {
                    return Vec::new();
                }
                let on_message_line = matches!(
                    contexts[0],
                    Context::Input | Context::Chat | Context::Palette | Context::PathPicker
                ) && self.recall.is_none();
                let opens = on_message_line
                    .then(|| self.picker_opened_by(&key))
                    .flatten();
                if contexts[0].is_text_entry() {
                    if let Some(field) = self.text_field() {
                        field.handle(&key);
                    }
                }
                if contexts[0] == Context::HistorySearch {
                    self.recall_step(false);
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
                if let Some(r) = self.recall.as_mut() {
                    return Some(&mut r.query);
                }
                match self.search.as_mut().and_then(|s| s.field.as_mut()) {
                    Some(f) => Some(f),
                    None => Some(&mut self.input),
                }
            }
        }
    }

    pub(in crate::tui::app) fn act(&mut self, action: Action, ctx: Context) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Help => {
                self.overlay = Some(Overlay::Help);
                self.help_scroll = 0;
                Vec::new()
            }
            A::InterruptOrQuit => self.interrupt_or_quit(),
            A::Suspend => vec![Effect::Suspend],
            // Anywhere, a review included: a request already asked keeps its question.
            A::CycleApprovals if self.replay.is_none() => self.cycle_approvals(),
            A::ExportSession if self.replay.is_none() => vec![Effect::ExportSession],
            A::RunCheck if self.replay.is_none() => match self.check.clone() {
                Some(command) => self.start_shell(command),
                None => {
                    self.transcript.notice(
                        Level::Warning,
                        "no check command: set `check` under [sandbox] in the config file or the repository's .lilypad/config.toml",
                    );
                    Vec::new()
                }
            },
            A::Quit => match self.warn_unsent(A::Quit) {
                Unsent::Warned => Vec::new(),
                Unsent::Again => self.quit_now(),
                Unsent::None => self.ask_to_quit(),
            },
                        A::Yes => {
                self.overlay = None;
                self.quit_now()
            }
            A::No => {
                self.overlay = None;
                Vec::new()
            }
            A::Cancel if ctx == Context::Help => {
                self.overlay = None;
                Vec::new()
            }
            A::ScrollUp | A::ScrollDown | A::PageUp | A::PageDown if ctx == Context::Help => {
                let page = self.help_page.get().max(1) as isize;
                let d = match action {
                    A::ScrollUp => -1,
                    A::ScrollDown => 1,
                    A::PageUp => -page,
                    _ => page,
                };
                self.help_scroll = (self.help_scroll as isize + d).max(0) as usize;
                Vec::new()
            }
            A::Submit | A::Cancel | A::Complete | A::PrevEntry | A::NextEntry
                if ctx == Context::Palette =>
            {
                self.act_palette(action)
            }
            A::Submit | A::Cancel | A::PrevEntry | A::NextEntry if ctx == Context::PathPicker => {
                self.act_picker(action)
            }
            A::Submit | A::Cancel | A::OlderMatch if ctx == Context::HistorySearch => {
                self.recall_choice(action);
                Vec::new()
            }
            A::Submit if ctx == Context::Search => self.submit_search(),
            A::Cancel if ctx == Context::Search || ctx == Context::Found => {
                self.end_search();
                Vec::new()
            }
            A::NextMatch => self.step_search(Direction::Forward),
            A::PrevMatch => self.step_search(Direction::Back),
            A::ContinueFresh | A::DropOldResults | A::Cancel if ctx == Context::ContextChoice => {
                self.context_choice(action)
            }
            A::EarlierTurn | A::LaterTurn | A::Submit | A::Cancel if ctx == Context::Rewind => {
                self.rewind_choice(action)
            }
            _ => match ctx {
                Context::Diff | Context::Folded | Context::Command if self.act_dock(action) => {
                    Vec::new()
                }
                Context::Comment | Context::Folded if matches!(self.mode, Mode::Patch(_)) => {
                    self.act_patch(action)
                }
                Context::Diff
                | Context::Folded
                | Context::Command
                | Context::Feedback
                | Context::Comment
                | Context::Prefix => self.act_review(action),
                Context::Patch | Context::SavePath | Context::ReviewSummary => {
                    self.act_patch(action)
                }
                _ => self.act_transcript(action),
            },
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
