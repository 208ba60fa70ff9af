//! Every key binding, its footer hint and its help text, in one table ([`BINDINGS`]). The
//! interface looks keys up here ([`lookup`]), the footer shows [`hints`] and the help overlay
//! lists [`help_sections`], so a binding cannot exist without being documented.
//!
//! Keys are looked up by [`Context`], most specific first. Text-entry contexts (the input line,
//! feedback, a file name) bind only Enter, Esc and Ctrl-C; every other key types.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where the interface is, for key lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// Always, even while typing.
    Anywhere,
    /// Whenever no text is being typed.
    Browse,
    /// The transcript, in the modal scheme (`[interface] keys = "modal"`).
    Transcript,
    /// The transcript with the message line in front (the default scheme): its commands are
    /// chords, and every other key types.
    Chat,
    /// Stepping through a recorded session.
    Replay,
    /// Reviewing a file change.
    Diff,
    /// A review shows a folded lock or generated file, or the line cursor is beside folded
    /// unchanged lines.
    Folded,
    /// Reviewing a command.
    Command,
    /// The session patch.
    Patch,
    /// Typing a message to the model.
    Input,
    /// Typing why a change or command is rejected.
    Feedback,
    /// Typing a comment on a line of a change under review, or in the session review on a
    /// line, a range or a file.
    Comment,
    /// Typing the session review's summary, which submits it.
    ReviewSummary,
    /// Typing where to save the patch.
    SavePath,
    /// A yes/no question.
    Confirm,
    /// The conversation is full: how to go on with the message just typed.
    ContextChoice,
    /// Choosing the turn to rewind to, and confirming it.
    Rewind,
    /// The help overlay.
    Help,
    /// Choosing the words of a command approval rule.
    Prefix,
    /// Typing what to search the transcript for.
    Search,
    /// A search has found something: moving between its matches.
    Found,
    /// Searching the messages sent in this repository (Ctrl-R on the message line).
    HistorySearch,
    /// The command palette: `/` typed on an empty message line.
    Palette,
    /// The file picker: `@` typed on the message line.
    PathPicker,
    /// The attempts board's cards (`--attempts N`).
    Board,
    /// The attempts board's pieces.
    Pieces,
    /// An attempt opened from the board (its own view), outside text entry and overlays.
    Attempt,
}

impl Context {
    /// The heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Context::Anywhere => "Anywhere",
            Context::Browse => "Outside text entry",
            Context::Transcript => "Transcript (keys = \"modal\")",
            Context::Chat => "Transcript, with the message line in front (the default keys)",
            Context::Replay => "Replay",
            Context::Diff => "Reviewing a file change",
            Context::Folded => {
                "Something folded in a review (a lock or generated file, unchanged lines)"
            }
            Context::Command => "Reviewing a command",
            Context::Patch => "Session patch",
            Context::Input => "Message line",
            Context::Feedback => "Rejection feedback",
            Context::Comment => "Commenting on a line",
            Context::ReviewSummary => "Submitting the session review",
            Context::SavePath => "Saving the patch",
            Context::Confirm => "Questions",
            Context::ContextChoice => "The context is full",
            Context::Rewind => "Rewinding to a turn",
            Context::Help => "This help",
            Context::Prefix => "Choosing a command rule",
            Context::Search => "Searching the transcript",
            Context::Found => "After a search",
            Context::HistorySearch => "Searching the messages sent",
            Context::Palette => "The command palette (/ on an empty message line)",
            Context::PathPicker => "The file picker (@ on the message line)",
            Context::Board => "The attempts board (--attempts N)",
            Context::Pieces => "The attempts board's pieces",
            Context::Attempt => "An attempt opened from the board",
        }
    }

    /// Contexts where printable keys type text.
    pub fn is_text_entry(self) -> bool {
        matches!(
            self,
            Context::Input
                | Context::Chat
                | Context::Feedback
                | Context::Comment
                | Context::ReviewSummary
                | Context::SavePath
                | Context::Search
                | Context::HistorySearch
                | Context::Palette
                | Context::PathPicker
        )
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Help,
    Quit,
    /// Ctrl-C: interrupt the agent if it works, then quit or ask whether to.
    InterruptOrQuit,
    /// Copy the item in front as clean text.
    Copy,
    /// Approve the selected hunks, telling the model why the others were dropped.
    ApprovePartly,
    /// Open a lock or generated file a review shows folded.
    Unfold,
    /// Comment on the line under the cursor of a diff.
    Comment,
    /// Approve a command with a rule for the commands that start like it.
    ChoosePrefix,
    Fewer,
    More,
    SaveRule,
    Search,
    NextMatch,
    PrevMatch,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    NextItem,
    PrevItem,
    ToggleItem,
    ToggleReasoning,
    ToggleStepMode,
    /// Use the next approval policy of `ApprovalPolicy::PRESETS`.
    CycleApprovals,
    /// Write the session as Markdown beside its log.
    ExportSession,
    /// Run the repository's check command in the sandbox, as `!cmd` runs a command.
    RunCheck,
    StepOnce,
    Interrupt,
    FocusInput,
    ShowPatch,
    Submit,
    Cancel,
    Approve,
    ApproveForSession,
    Reject,
    ToggleHunk,
    NextHunk,
    PrevHunk,
    OpenEditor,
    ApplyPatch,
    SavePatch,
    DiscardPatch,
    Yes,
    No,
    ContinueFresh,
    DropOldResults,
    ReplayNext,
    ReplayPrev,
    ReplayEnd,
    /// Choose an earlier turn to go back to (conversation, files, model memory).
    Rewind,
    EarlierTurn,
    LaterTurn,
    /// The message line: start a new line.
    Newline,
    /// The message line: Up on its first line (the previous message of the history), else
    /// the line above.
    HistoryPrev,
    /// The message line: Down on its last line (the next message of the history), else the
    /// line below.
    HistoryNext,
    DeleteWordBack,
    KillToLineEnd,
    WordLeft,
    WordRight,
    LineStart,
    LineEnd,
    /// Ctrl-R on the message line: search the messages sent.
    SearchHistory,
    /// Ctrl-R again: the next older message that matches.
    OlderMatch,
    /// Edit the message line's text in `$VISUAL` or `$EDITOR`.
    EditDraft,
    /// Stop the program as a shell's Ctrl-Z would (back with `fg`).
    Suspend,
    /// Esc with the message line in front: interrupt the agent while it works; on an empty
    /// line, a second Esc asks which turn to rewind to.
    EscapeOrRewind,
    /// A list (the palette, the file picker): the entry above.
    PrevEntry,
    /// A list: the entry below.
    NextEntry,
    /// A list: put the chosen entry on the message line without running or sending it.
    Complete,
    /// A docked review: move the focus between the diff and the conversation above it.
    SwitchPane,
    /// A docked review: the change fills the screen, or docks again.
    FullScreen,
    /// A review: diffs side by side, or unified.
    ToggleSplit,
    /// The session review: show the file chosen in the list.
    OpenFile,
    /// The session review: start (or drop) a selection of lines to comment on.
    SelectRange,
    /// The session review: comment on the shown file.
    CommentFile,
    /// The session review: mark the file viewed, or not.
    ToggleViewed,
    /// The session review: the last turn's changes, or the whole session's.
    ToggleScope,
    /// The session review: send every pending comment and a summary as one message.
    RequestChanges,
    /// The session review: record the pending comments without sending them.
    CommentReview,
    /// The attempts board: choose the attempt of the digit pressed.
    ChooseAttempt,
    /// The attempts board: open the chosen attempt's own view.
    OpenAttempt,
    /// The attempts board: open the pieces of every attempt's patch.
    TakePieces,
    /// The attempts board's pieces: take every piece of the focused piece's attempt.
    TakeAttempt,
    /// An attempt opened from the board: the board in front again.
    BackToBoard,
}

/// A key: code plus Ctrl/Alt, and Shift where it is not part of the character (Shift-Enter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
    pub shift: bool,
}

pub(crate) const fn ch(c: char) -> Key {
    code(KeyCode::Char(c))
}

pub(crate) const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: true,
        alt: false,
        shift: false,
    }
}

pub(crate) const fn alt(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: false,
        alt: true,
        shift: false,
    }
}

pub(crate) const fn alt_code(code: KeyCode) -> Key {
    Key {
        code,
        ctrl: false,
        alt: true,
        shift: false,
    }
}

pub(crate) const fn shift_code(code: KeyCode) -> Key {
    Key {
        code,
        ctrl: false,
        alt: false,
        shift: true,
    }
}

pub(crate) const fn code(code: KeyCode) -> Key {
    Key {
        code,
        ctrl: false,
        alt: false,
        shift: false,
    }
}

impl Key {
    fn matches(&self, ev: &KeyEvent) -> bool {
        let ev_ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let ev_alt = ev.modifiers.contains(KeyModifiers::ALT);
        let ev_shift = ev.modifiers.contains(KeyModifiers::SHIFT);
        if ev_alt != self.alt || ev_ctrl != self.ctrl {
            return false;
        }
        // Shift is part of a character, and of Shift-Tab (`BackTab`); Shift-Enter is not
        // Enter.
        if (self.shift || self.code == KeyCode::Enter) && ev_shift != self.shift {
            return false;
        }
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => {
                a == b || ((self.ctrl || self.alt) && a.eq_ignore_ascii_case(&b))
            }
            (a, b) => a == b,
        }
    }

    /// How the key is written in hints and help.
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "Shift-Tab".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        match (self.ctrl, self.alt, self.shift) {
            (true, _, _) => format!("Ctrl-{}", base.to_uppercase()),
            (_, true, _) if base.chars().count() == 1 => format!("Alt-{}", base.to_uppercase()),
            (_, true, _) => format!("Alt-{base}"),
            (_, _, true) => format!("Shift-{base}"),
            _ => base,
        }
    }
}

/// One binding: where, which keys, what it does, its footer hint (if shown there), its help,
/// and its name in the command palette (`/patch`), if it is listed there.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [Key],
    pub action: Action,
    pub hint: Option<&'static str>,
    pub help: &'static str,
    pub command: Option<&'static str>,
}

impl Binding {
    /// The same binding, listed in the command palette as `/name`.
    pub(crate) const fn named(self, name: &'static str) -> Self {
        Binding {
            command: Some(name),
            ..self
        }
    }
}

pub(crate) const fn b(
    context: Context,
    keys: &'static [Key],
    action: Action,
    hint: Option<&'static str>,
    help: &'static str,
) -> Binding {
    Binding {
        context,
        keys,
        action,
        hint,
        help,
        command: None,
    }
}

mod bindings;

pub use bindings::BINDINGS;

/// Text editing keys, for the help overlay (handled by the text field itself; the message
/// line's own keys are in the table).
pub const EDITING_HELP: &str =
    "typing edits the text; ← → move; Backspace Delete erase; Ctrl-U clears; pastes keep their lines";

/// The mouse, for the help overlay (the runner turns the wheel into the scroll actions of the
/// view in front).
pub const MOUSE_HELP: &str =
    "scrolls the transcript, a change under review, the session patch or this help";

/// The key list of `docs/interface.md`, made from the same table (a test keeps the page
/// equal to it).
pub fn markdown() -> String {
    let mut out = String::new();
    for (title, entries) in help_sections() {
        out.push_str(&format!(
            "\n**{title}**\n\n| keys | what it does |\n|---|---|\n"
        ));
        for (keys, help) in entries {
            let keys = if keys == "keys" || keys == "wheel" {
                keys
            } else {
                keys.split(' ')
                    .map(|k| format!("`{}`", k.replace('|', "\\|")))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            out.push_str(&format!("| {keys} | {help} |\n"));
        }
    }
    out
}

/// The action of `ev` in the first of `contexts` that binds it.
pub fn lookup(contexts: &[Context], ev: &KeyEvent) -> Option<Action> {
    contexts.iter().find_map(|ctx| {
        BINDINGS
            .iter()
            .find(|bd| bd.context == *ctx && bd.keys.iter().any(|k| k.matches(ev)))
            .map(|bd| bd.action)
    })
}

/// The footer hints for `contexts`: (first key, hint), in table order.
/// A key a more specific context already binds is not hinted again for a later one.
pub fn hints(contexts: &[Context]) -> Vec<(String, &'static str)> {
    let mut taken: Vec<Key> = Vec::new();
    let mut out = Vec::new();
    for ctx in contexts {
        for bd in BINDINGS.iter().filter(|bd| bd.context == *ctx) {
            let first = bd.keys.first().copied();
            let shadowed = first.is_some_and(|k| taken.contains(&k));
            if let (Some(k), Some(hint), false) = (first, bd.hint, shadowed) {
                out.push((k.label(), hint));
            }
        }
        for bd in BINDINGS.iter().filter(|bd| bd.context == *ctx) {
            taken.extend(bd.keys.iter().copied());
        }
    }
    out
}

/// Every binding grouped by context, for the help overlay: (title, [(keys, help)]).
pub fn help_sections() -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    let mut out: Vec<(&'static str, Vec<(String, &'static str)>)> = Vec::new();
    for bd in BINDINGS {
        let mut keys: Vec<String> = bd.keys.iter().map(Key::label).collect();
        keys.extend(bd.command.map(|c| format!("/{c}")));
        let entry = (keys.join(" "), bd.help);
        match out.iter_mut().find(|(t, _)| *t == bd.context.title()) {
            Some((_, list)) => list.push(entry),
            None => out.push((bd.context.title(), vec![entry])),
        }
        if bd.context == Context::Input && bd.action == Action::Cancel {
            if let Some((_, list)) = out.last_mut() {
                list.push(("keys".into(), EDITING_HELP));
            }
        }
    }
    out.push(("Mouse", vec![("wheel".into(), MOUSE_HELP)]));
    out
}

/// The bindings listed in the command palette, in table order (each has a `command`).
pub fn commands() -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(|bd| bd.command.is_some())
}

/// How the keys of `action` in `context` are written ("y q Ctrl-C").
pub fn keys_of(context: Context, action: Action) -> String {
    BINDINGS
        .iter()
        .filter(|bd| bd.context == context && bd.action == action)
        .flat_map(|bd| bd.keys.iter().map(Key::label))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `action` has a key in `context` (the mouse wheel uses the scroll actions).
pub fn binds(context: Context, action: Action) -> bool {
    BINDINGS
        .iter()
        .any(|bd| bd.context == context && bd.action == action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action as A;
    use Context as C;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn specific_contexts_win() {
        let esc = key(KeyCode::Esc);
        assert_eq!(lookup(&[C::Diff, C::Browse], &esc), Some(A::Reject));
        assert_eq!(
            lookup(&[C::Transcript, C::Browse], &esc),
            Some(A::Interrupt)
        );
        let n = key(KeyCode::Char('n'));
        assert_eq!(lookup(&[C::Replay, C::Transcript], &n), Some(A::ReplayNext));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(
            lookup(&[C::Input, C::Anywhere], &ctrl_c),
            Some(A::InterruptOrQuit)
        );
        assert_eq!(
            lookup(&[C::Input, C::Anywhere], &key(KeyCode::Char('q'))),
            None
        );
    }

    #[test]
    fn no_key_is_bound_twice_in_a_context() {
        for (i, a) in BINDINGS.iter().enumerate() {
            for bb in &BINDINGS[i + 1..] {
                if a.context == bb.context {
                    for k in a.keys {
                        assert!(
                            !bb.keys.contains(k),
                            "{:?} bound twice in {:?}",
                            k,
                            a.context
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn palette_names_are_unique_lowercase_words() {
        let names: Vec<&str> = commands().filter_map(|bd| bd.command).collect();
        assert!(names.len() >= 10, "{names:?}");
        for (i, n) in names.iter().enumerate() {
            assert!(
                n.chars().all(|c| c.is_ascii_lowercase()),
                "{n:?} is not one lowercase word"
            );
            assert!(!names[i + 1..].contains(n), "/{n} is named twice");
        }
    }

    #[test]
    fn every_binding_has_help() {
        assert!(BINDINGS
            .iter()
            .all(|bd| !bd.help.is_empty() && !bd.keys.is_empty()));
        let sections = help_sections();
        assert!(sections
            .iter()
            .any(|(t, _)| *t == "Reviewing a file change"));
    }
}
