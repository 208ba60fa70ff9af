//! Keys to actions (through the one key map) and what each action does in each context.

use super::review::{ChangeVerdict, FeedbackFor};
use super::{AgentState, App, Effect, Mode, Overlay, Review};
use crate::protocol::{Event, Op, ReviewDecision};
use crate::tui::keymap::{lookup, Action, Context};
use crate::tui::text_input::{clean_paste, TextInput};
use crate::tui::transcript::{Level, Transcript};
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

    /// A paste (bracketed paste: the terminal sends it whole). On the message line it keeps
    /// its lines, and one of more than [`FOLD_LINES`] lines is shown as `[pasted N lines]`
    /// (and sent whole); a one-line field (a file name, a search) takes it as one line. In
    /// the transcript it opens the message line, as typing `i` would.
    pub fn on_paste(&mut self, text: &str) {
        let text = clean_paste(text);
        if text.is_empty() {
            return;
        }
        let contexts = self.contexts();
        let accepts = self.replay.is_none()
            && self.overlay.is_none()
            && matches!(self.mode, Mode::Transcript)
            && self.search.as_ref().is_none_or(|s| s.field.is_none());
        if contexts[0] != Context::Input && accepts {
            self.input_focus = true;
        }
        match self.contexts()[0] {
            Context::Input | Context::Chat | Context::Palette | Context::PathPicker => {
                let lines = text.lines().count();
                if lines > FOLD_LINES {
                    let mut label = format!("[pasted {lines} lines]");
                    let mut n = 1;
                    while self.pastes.iter().any(|(l, _)| *l == label) {
                        n += 1;
                        label = format!("[pasted {lines} lines #{n}]");
                    }
                    self.input.insert_str(&label);
                    self.pastes.push((label, text));
                } else {
                    self.input.insert_str(&text);
                }
            }
            Context::Feedback | Context::Comment | Context::ReviewSummary => {
                if let Some(f) = self.text_field() {
                    f.insert_str(&text.replace('\n', " "));
                }
            }
            c if c.is_text_entry() => {
                if let Some(f) = self.text_field() {
                    f.insert_str(text.lines().next().unwrap_or_default());
                }
                if c == Context::HistorySearch {
                    self.recall_step(false);
                }
            }
            _ => {}
        }
        self.refresh_pickers();
    }

    /// Backspace right after a folded paste's label deletes the label (and the paste) whole.
    fn delete_folded_paste(&mut self) -> bool {
        let before = self.input.before_cursor();
        let Some(i) = self
            .pastes
            .iter()
            .position(|(l, _)| before.ends_with(l.as_str()))
        else {
            return false;
        };
        let (label, _) = self.pastes.remove(i);
        self.input.delete_back(label.chars().count());
        true
    }

    /// The message as it is sent: the line's text with each folded paste put back whole.
    pub(super) fn message_text(&self) -> String {
        let mut text = self.input.text().to_string();
        for (label, pasted) in &self.pastes {
            if let Some(at) = text.find(label.as_str()) {
                text.replace_range(at..at + label.len(), pasted);
            }
        }
        text
    }

    /// The message line is sent (or handed on): empty it, and keep the text in the history.
    fn take_message(&mut self, text: &str) {
        self.input.take();
        self.pastes.clear();
        self.input_focus = false;
        self.sent.push(text);
    }

    /// Up or Down on the message line: the line above or below, or from the first (last)
    /// line the previous (next) message of the history.
    fn line_or_history(&mut self, to: Direction) {
        if self.input.line_move(to) {
            return;
        }
        let recalled = match to {
            Direction::Back => {
                let current = self.input.text().to_string();
                self.sent.back(&current).map(str::to_string)
            }
            Direction::Forward => self.sent.forward(),
        };
        let Some(text) = recalled else {
            return;
        };
        self.pastes.clear();
        self.input.set_text(&text);
        if to == Direction::Back {
            // On the first line, so that Up goes on to the older message.
            self.input.to_first_line_end();
        }
    }

    /// Search the messages sent again for what is typed: from the newest, or (`older`) from
    /// before the one found. The message line shows the message found, or the draft when
    /// none matches.
    fn recall_step(&mut self, older: bool) {
        let Some(r) = self.recall.as_mut() else {
            return;
        };
        let before = match (older, r.found) {
            (true, Some(i)) => i,
            _ => self.sent.entries().len(),
        };
        match self.sent.find(r.query.text(), before) {
            Some(i) => {
                r.found = Some(i);
                let text = self.sent.entries()[i].clone();
                self.pastes.clear();
                self.input.set_text(&text);
            }
            // Ctrl-R past the oldest match keeps the one found.
            None if older => {}
            None => {
                r.found = None;
                let draft = r.draft.clone();
                self.input.set_text(&draft);
            }
        }
    }

    /// Enter (keep the message found on the line), Esc (the line as it was) or Ctrl-R (an
    /// older match) in a search of the messages sent.
    fn recall_choice(&mut self, action: Action) {
        match action {
            Action::OlderMatch => self.recall_step(true),
            Action::Cancel => {
                if let Some(r) = self.recall.take() {
                    self.input.set_text(&r.draft);
                }
            }
            _ => self.recall = None,
        }
    }

    /// The message line's own keys: new lines, history, word and line motions.
    fn act_composer(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Newline => self.input.newline(),
            A::HistoryPrev => self.line_or_history(Direction::Back),
            A::HistoryNext => self.line_or_history(Direction::Forward),
            A::DeleteWordBack => self.input.delete_word_back(),
            A::KillToLineEnd => self.input.kill_to_line_end(),
            A::WordLeft => self.input.word_left(),
            A::WordRight => self.input.word_right(),
            A::LineStart => self.input.line_start(),
            A::LineEnd => self.input.line_end(),
            A::SearchHistory => {
                self.recall = Some(crate::tui::history::Recall {
                    draft: self.input.text().to_string(),
                    ..Default::default()
                });
                self.recall_step(false);
            }
            A::EditDraft => return vec![Effect::EditDraft(self.message_text())],
            _ => {}
        }
        Vec::new()
    }

    /// The editor opened with Ctrl-G is closed: what was saved is the message line's text
    /// (the file's last line end dropped), or on failure the line stays as it was.
    pub fn on_draft_edited(&mut self, result: Result<String, crate::tui::actions::ActionError>) {
        match result {
            Ok(text) => {
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                self.pastes.clear();
                self.input.set_text(text);
                if !self.chat_in_front() && matches!(self.mode, Mode::Transcript) {
                    self.input_focus = true;
                }
            }
            Err(e) => self.transcript.notice(
                Level::Warning,
                format!("the editor failed, the message is kept as it was: {e}"),
            ),
        }
    }

    /// Esc with the message line in front: interrupt the agent while it works; else on an
    /// empty line the first Esc arms and the second asks which turn to rewind to.
    fn escape_or_rewind(&mut self) -> Vec<Effect> {
        if self.status.state.is_busy() {
            self.esc_armed = false;
            return self.act_transcript(Action::Interrupt);
        }
        if !self.input.text().is_empty() {
            self.esc_armed = false;
            return Vec::new();
        }
        if std::mem::take(&mut self.esc_armed) {
            return self.open_rewind();
        }
        self.esc_armed = true;
        Vec::new()
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

    pub(super) fn act(&mut self, action: Action, ctx: Context) -> Vec<Effect> {
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
            A::Quit => match self.quit_question() {
                Some(q) => {
                    self.overlay = Some(Overlay::ConfirmQuit(q));
                    Vec::new()
                }
                None => self.quit_now(),
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

    fn act_review(&mut self, action: Action) -> Vec<Effect> {
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

    pub(super) fn act_transcript(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Newline
            | A::HistoryPrev
            | A::HistoryNext
            | A::DeleteWordBack
            | A::KillToLineEnd
            | A::WordLeft
            | A::WordRight
            | A::LineStart
            | A::LineEnd
            | A::EditDraft
            | A::SearchHistory => self.act_composer(action),
            A::EscapeOrRewind => self.escape_or_rewind(),

            A::Submit => {
                if self.input.text().trim().is_empty() {
                    return Vec::new();
                }
                let text = self.message_text().trim().to_string();
                let state = self.status.state;
                if let Some(command) = shell_command(&text) {
                    return self.run_shell(&text, command);
                }
                if self.context_full && state.accepts_message() {
                    // Sent only once the person has chosen how to make room.
                    self.take_message(&text);
                    self.overlay = Some(Overlay::ContextFull(text));
                    return Vec::new();
                }
                if state == AgentState::Starting {
                    // The runner holds it until the session is ready, then sends it like any
                    // other message (after the task given on the command line, if any).
                    self.take_message(&text);
                    self.transcript.notice(
                        Level::Info,
                        format!("queued until the session has started › {text}"),
                    );
                    return vec![Effect::Send(Op::UserMessage { text })];
                }
                if !state.accepts_message() && !state.is_busy() {
                    self.transcript.notice(
                        Level::Warning,
                        "the session is not running: the message cannot be sent",
                    );
                    return Vec::new();
                }
                // While the agent works or is paused, the agent queues the message for the
                // next turn boundary (and says so with `MessageQueued`).
                self.take_message(&text);
                vec![Effect::Send(Op::UserMessage { text })]
            }
            A::Cancel => {
                self.input_focus = false;
                Vec::new()
            }
            A::Search => self.start_search(),
            A::Copy => match self.transcript.copy_text() {
                Some((what, text)) => vec![Effect::Copy { what, text }],
                None => {
                    self.transcript
                        .notice(Level::Info, "nothing to copy: select an item with Tab");
                    Vec::new()
                }
            },
            A::FocusInput => {
                if self.replay.is_some() {
                    return Vec::new();
                }
                self.input_focus = true;
                Vec::new()
            }
            A::Interrupt => {
                if self.status.state.is_busy() && self.replay.is_none() {
                    self.transcript.notice(Level::Warning, "interrupting…");
                    return vec![Effect::Send(Op::Interrupt)];
                }
                Vec::new()
            }
            A::ToggleStepMode if self.replay.is_none() => {
                self.status.step_mode = !self.status.step_mode;
                vec![Effect::Send(Op::SetStepMode {
                    on: self.status.step_mode,
                })]
            }
            A::StepOnce if self.status.state == AgentState::Paused => {
                self.status.state = AgentState::Generating;
                vec![Effect::Send(Op::Step)]
            }
            A::ShowPatch => {
                if self.options.has_patch && self.replay.is_none() {
                    return vec![Effect::ExportPatch];
                }
                Vec::new()
            }
            A::ScrollUp => self.scroll(-1),
            A::ScrollDown => self.scroll(1),
            A::PageUp => {
                self.transcript.page(Direction::Back);
                Vec::new()
            }
            A::PageDown => {
                self.transcript.page(Direction::Forward);
                Vec::new()
            }
            A::Top => {
                self.transcript.to_top();
                Vec::new()
            }
            A::Bottom => {
                self.transcript.to_bottom();
                Vec::new()
            }
            A::NextItem | A::PrevItem => {
                let ctx = self.render_ctx_owned();
                self.transcript
                    .select(toward(action, A::NextItem), &ctx.as_ctx());
                Vec::new()
            }
            A::ToggleItem => {
                let ctx = self.render_ctx_owned();
                self.transcript.toggle_selected(&ctx.as_ctx());
                Vec::new()
            }
            A::ToggleReasoning => {
                self.reasoning = self.reasoning.next();
                self.bump_epoch();
                let ctx = self.render_ctx_owned();
                self.transcript.unselect_hidden(&ctx.as_ctx());
                Vec::new()
            }
            A::Rewind => self.open_rewind(),
            A::ReplayNext => self.replay_step(Direction::Forward),
            A::ReplayPrev => self.replay_step(Direction::Back),
            A::ReplayEnd => {
                let mut fx = Vec::new();
                while let Some(more) = self.replay_advance() {
                    fx.extend(more);
                }
                fx
            }
            _ => Vec::new(),
        }
    }

    /// Shift-Tab, `/approvals`: ask the agent for the next preset policy. The status line
    /// shows it at once, so that presses in quick succession step on from it; the agent's
    /// `ApprovalPolicyChanged` confirms it.
    fn cycle_approvals(&mut self) -> Vec<Effect> {
        let state = self.status.state;
        let Some(current) = self.status.approval_policy else {
            self.transcript.notice(
                Level::Info,
                "the approval policy can be changed once the session has started",
            );
            return Vec::new();
        };
        if state == AgentState::Ended {
            return Vec::new();
        }
        let policy = current.next_preset();
        self.status.approval_policy = Some(policy);
        vec![Effect::Send(Op::SetApprovalPolicy { policy })]
    }

    /// `!cmd` sent: the command runs in the sandbox for the person (once the agent is
    /// between tasks), and its output goes with the next message.
    fn run_shell(&mut self, text: &str, command: String) -> Vec<Effect> {
        if !self.shell_can_run() {
            return Vec::new();
        }
        self.take_message(text);
        self.start_shell(command)
    }

    /// Whether the person's command can run now (else a notice says why not).
    fn shell_can_run(&mut self) -> bool {
        let state = self.status.state;
        if state == AgentState::Starting || (!state.accepts_message() && !state.is_busy()) {
            self.transcript.notice(
                Level::Warning,
                "the session is not running: the command cannot run",
            );
            return false;
        }
        true
    }

    /// Run `command` in the sandbox as the person's (see [`Self::run_shell`]).
    fn start_shell(&mut self, command: String) -> Vec<Effect> {
        if !self.shell_can_run() {
            return Vec::new();
        }
        let state = self.status.state;
        let when = if state.is_busy() {
            "runs in the sandbox once the agent has finished"
        } else {
            self.shell_before = Some(state);
            self.status.state = AgentState::RunningTool;
            "running in the sandbox… Esc interrupts"
        };
        self.transcript
            .notice(Level::Info, format!("$ {command}  ({when})"));
        vec![Effect::Send(Op::Shell { command })]
    }

    /// Ctrl-C: while the agent works, interrupt it and ask whether to quit as well (a second
    /// Ctrl-C answers yes); otherwise quit, asking first when work would be lost.
    fn interrupt_or_quit(&mut self) -> Vec<Effect> {
        if self.status.state.is_busy() && self.replay.is_none() {
            self.transcript
                .notice(Level::Warning, "interrupting… (Ctrl-C again quits)");
            self.overlay = Some(Overlay::ConfirmQuit(
                "Interrupted. Quit and end the session as well?".into(),
            ));
            return vec![Effect::Send(Op::Interrupt)];
        }
        match self.quit_question() {
            Some(q) => {
                self.overlay = Some(Overlay::ConfirmQuit(q));
                Vec::new()
            }
            None => self.quit_now(),
        }
    }

    /// The person's answer to the full-context question.
    fn context_choice(&mut self, action: Action) -> Vec<Effect> {
        let Some(Overlay::ContextFull(text)) = self.overlay.take() else {
            return Vec::new();
        };
        let op = match action {
            Action::ContinueFresh => Op::ContinueFresh { text },
            Action::DropOldResults => Op::DropOldResults { text: Some(text) },
            _ => {
                // Back to the message line with the text as it was.
                self.input = TextInput::with_text(&text);
                self.input_focus = true;
                return Vec::new();
            }
        };
        self.status.state = AgentState::Generating;
        vec![Effect::Send(op)]
    }

    /// `R`: ask which turn to go back to (the one before the last, to begin with).
    fn open_rewind(&mut self) -> Vec<Effect> {
        if self.replay.is_some() || self.status.state == AgentState::Ended {
            return Vec::new();
        }
        let mut turns = self.transcript.turns();
        if !turns.contains(&0) {
            turns.insert(0, 0);
        }
        if turns.len() < 2 {
            self.transcript
                .notice(Level::Info, "no earlier turn to rewind to yet");
            return Vec::new();
        }
        let turn = turns[turns.len() - 2];
        self.input_focus = false;
        self.overlay = Some(Overlay::Rewind { turn, turns });
        Vec::new()
    }

    /// The person's answer in the rewind question: another turn, go, or not.
    fn rewind_choice(&mut self, action: Action) -> Vec<Effect> {
        let Some(Overlay::Rewind { turn, turns }) = &mut self.overlay else {
            return Vec::new();
        };
        let at = turns.iter().position(|t| t == turn).unwrap_or(0);
        match action {
            Action::EarlierTurn => *turn = turns[at.saturating_sub(1)],
            Action::LaterTurn => *turn = turns[(at + 1).min(turns.len() - 1)],
            Action::Submit => {
                let turn = *turn;
                self.overlay = None;
                if self.status.state.is_busy() {
                    self.transcript
                        .notice(Level::Warning, "interrupting, then rewinding…");
                }
                return vec![Effect::Send(Op::Rewind { turn })];
            }
            _ => self.overlay = None,
        }
        Vec::new()
    }

    fn scroll(&mut self, d: isize) -> Vec<Effect> {
        self.transcript.scroll_by(d);
        Vec::new()
    }

    fn render_ctx_owned(&self) -> OwnedCtx {
        OwnedCtx {
            theme: self.theme.clone(),
            hl: self.hl.clone(),
            reasoning: self.reasoning,
            epoch: self.epoch,
        }
    }

    /// Start a replay of recorded events (nothing is shown until the first step).
    pub fn start_replay(&mut self, events: Vec<Event>) -> Vec<Effect> {
        self.replay = Some((events, 0));
        self.status.state = AgentState::Replay;
        self.replay_step(Direction::Forward)
    }

    /// Apply events up to and including the next turn end; `None` at the end.
    fn replay_advance(&mut self) -> Option<Vec<Effect>> {
        let (events, pos) = self.replay.as_mut()?;
        if *pos >= events.len() {
            return None;
        }
        let mut batch = Vec::new();
        while *pos < events.len() {
            let ev = events[*pos].clone();
            *pos += 1;
            let stop = matches!(ev, Event::TurnFinished { .. });
            batch.push(ev);
            if stop {
                break;
            }
        }
        let mut fx = Vec::new();
        for ev in batch {
            fx.extend(self.on_event(ev));
        }
        Some(fx)
    }

    fn replay_step(&mut self, to: Direction) -> Vec<Effect> {
        if to == Direction::Forward {
            return self.replay_advance().unwrap_or_default();
        }
        // Back: rebuild from the start up to the turn before this one.
        let Some((events, pos)) = self.replay.take() else {
            return Vec::new();
        };
        // The last turn end strictly before the current position (0: the very start).
        let target = events[..pos.min(events.len())]
            .iter()
            .enumerate()
            .rev()
            .filter(|(i, e)| matches!(e, Event::TurnFinished { .. }) && i + 1 < pos)
            .map(|(i, _)| i + 1)
            .next()
            .unwrap_or(0);
        self.transcript = Transcript::new();
        let elapsed = self.status.elapsed_override;
        self.status = Default::default();
        self.status.state = AgentState::Replay;
        self.status.elapsed_override = elapsed;
        self.replay = Some((events.clone(), target));
        let mut fx = Vec::new();
        for ev in events.into_iter().take(target) {
            fx.extend(self.on_event(ev));
        }
        fx
    }
}

/// The command of a message `!cmd` (`!` and a command, on one line or more), if it is one.
fn shell_command(text: &str) -> Option<String> {
    let command = text.strip_prefix('!')?.trim();
    (!command.is_empty()).then(|| command.to_string())
}

/// The direction of one action of a next/previous pair: forward when it is `next`.
fn toward(action: Action, next: Action) -> Direction {
    if action == next {
        Direction::Forward
    } else {
        Direction::Back
    }
}

/// A render context that owns its parts, for transcript calls made while `self` is borrowed.
struct OwnedCtx {
    theme: crate::tui::theme::Theme,
    hl: crate::diff::Highlighter,
    reasoning: crate::tui::ReasoningView,
    epoch: u64,
}

impl OwnedCtx {
    fn as_ctx(&self) -> crate::tui::transcript::RenderCtx<'_> {
        crate::tui::transcript::RenderCtx {
            theme: &self.theme,
            hl: &self.hl,
            reasoning: self.reasoning,
            epoch: self.epoch,
        }
    }
}
