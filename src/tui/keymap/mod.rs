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
    /// The transcript (the main view).
    Transcript,
    /// Stepping through a recorded session.
    Replay,
    /// Reviewing a file change.
    Diff,
    /// Reviewing a command.
    Command,
    /// The session patch.
    Patch,
    /// Typing a message to the model.
    Input,
    /// Typing why a change or command is rejected.
    Feedback,
    /// Typing where to save the patch.
    SavePath,
    /// A yes/no question.
    Confirm,
    /// The help overlay.
    Help,
}

impl Context {
    /// The heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Context::Anywhere => "Anywhere",
            Context::Browse => "Outside text entry",
            Context::Transcript => "Transcript",
            Context::Replay => "Replay",
            Context::Diff => "Reviewing a file change",
            Context::Command => "Reviewing a command",
            Context::Patch => "Session patch",
            Context::Input => "Message line",
            Context::Feedback => "Rejection feedback",
            Context::SavePath => "Saving the patch",
            Context::Confirm => "Questions",
            Context::Help => "This help",
        }
    }

    /// Contexts where printable keys type text.
    pub fn is_text_entry(self) -> bool {
        matches!(self, Context::Input | Context::Feedback | Context::SavePath)
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Help,
    Quit,
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
    ReplayNext,
    ReplayPrev,
    ReplayEnd,
}

/// A key: code plus Ctrl/Alt (Shift is part of the character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn ch(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: false,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: true,
    }
}

const fn code(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

impl Key {
    fn matches(&self, ev: &KeyEvent) -> bool {
        let ev_ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        if ev.modifiers.contains(KeyModifiers::ALT) || ev_ctrl != self.ctrl {
            return false;
        }
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => a == b || (self.ctrl && a.eq_ignore_ascii_case(&b)),
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
            other => format!("{other:?}"),
        };
        if self.ctrl {
            format!("Ctrl-{}", base.to_uppercase())
        } else {
            base
        }
    }
}

/// One binding: where, which keys, what it does, its footer hint (if shown there) and its help.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [Key],
    pub action: Action,
    pub hint: Option<&'static str>,
    pub help: &'static str,
}

const fn b(
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
    }
}

use Action as A;
use Context as C;

/// The key map. Order matters within a context: the first matching binding wins, and hints
/// appear in this order.
pub const BINDINGS: &[Binding] = &[
    b(C::Anywhere, &[ctrl('c')], A::Quit, None, "quit (asks first while the agent works)"),
    b(C::Browse, &[ch('?')], A::Help, Some("help"), "show or hide this help"),
    b(C::Browse, &[ch('q')], A::Quit, Some("quit"), "quit (asks first while the agent works or a patch is pending)"),
    // Reviewing a file change.
    b(C::Diff, &[ch('y'), code(KeyCode::Enter)], A::Approve, Some("approve"), "approve the change (only the selected hunks, if some are deselected)"),
    b(C::Diff, &[ch('a')], A::ApproveForSession, Some("approve all edits"), "approve, and approve every further edit in this session"),
    b(C::Diff, &[code(KeyCode::Esc), ch('x')], A::Reject, Some("reject"), "reject, and tell the model why"),
    b(C::Diff, &[ch(' ')], A::ToggleHunk, Some("toggle hunk"), "select or deselect the current hunk"),
    b(C::Diff, &[ch(']'), code(KeyCode::Tab)], A::NextHunk, Some("next hunk"), "go to the next hunk"),
    b(C::Diff, &[ch('['), code(KeyCode::BackTab)], A::PrevHunk, None, "go to the previous hunk"),
    b(C::Diff, &[ch('e')], A::OpenEditor, Some("edit"), "open the proposed text in $EDITOR, then approve what you saved"),
    b(C::Diff, &[ch('k'), code(KeyCode::Up)], A::ScrollUp, None, "scroll up"),
    b(C::Diff, &[ch('j'), code(KeyCode::Down)], A::ScrollDown, None, "scroll down"),
    b(C::Diff, &[code(KeyCode::PageUp)], A::PageUp, None, "scroll a page up"),
    b(C::Diff, &[code(KeyCode::PageDown)], A::PageDown, None, "scroll a page down"),
    // Reviewing a command.
    b(C::Command, &[ch('y'), code(KeyCode::Enter)], A::Approve, Some("run it"), "approve: run the command"),
    b(C::Command, &[ch('a')], A::ApproveForSession, Some("allow all commands"), "approve, and every further command in this session"),
    b(C::Command, &[code(KeyCode::Esc), ch('x')], A::Reject, Some("reject"), "do not run it, and tell the model why"),
    // The session patch.
    b(C::Patch, &[ch('a')], A::ApplyPatch, Some("apply to your tree"), "apply the patch to your working tree (git apply)"),
    b(C::Patch, &[ch('w')], A::SavePatch, Some("save as file"), "save the patch as a file"),
    b(C::Patch, &[ch('d')], A::DiscardPatch, Some("discard"), "discard the patch"),
    b(C::Patch, &[code(KeyCode::Esc)], A::Cancel, Some("back"), "back to the transcript (decide later with p)"),
    b(C::Patch, &[ch(']'), code(KeyCode::Tab)], A::NextHunk, Some("next file"), "go to the next file"),
    b(C::Patch, &[ch('['), code(KeyCode::BackTab)], A::PrevHunk, None, "go to the previous file"),
    b(C::Patch, &[ch('k'), code(KeyCode::Up)], A::ScrollUp, None, "scroll up"),
    b(C::Patch, &[ch('j'), code(KeyCode::Down)], A::ScrollDown, None, "scroll down"),
    b(C::Patch, &[code(KeyCode::PageUp)], A::PageUp, None, "scroll a page up"),
    b(C::Patch, &[code(KeyCode::PageDown)], A::PageDown, None, "scroll a page down"),
    // Replay.
    b(C::Replay, &[ch('n'), ch(' '), code(KeyCode::Right)], A::ReplayNext, Some("next turn"), "show the next turn"),
    b(C::Replay, &[ch('b'), code(KeyCode::Left)], A::ReplayPrev, Some("previous turn"), "go back one turn"),
    b(C::Replay, &[ch('e')], A::ReplayEnd, Some("to the end"), "show the whole session"),
    // The transcript.
    b(C::Transcript, &[code(KeyCode::Esc)], A::Interrupt, Some("interrupt"), "interrupt the model or the running command"),
    b(C::Transcript, &[ch('s')], A::ToggleStepMode, Some("step mode"), "step mode on/off: pause after every turn"),
    b(C::Transcript, &[ch('n')], A::StepOnce, Some("next turn"), "in step mode: run one more turn"),
    b(C::Transcript, &[ch('i')], A::FocusInput, Some("message"), "type a message to the model (when it waits for one)"),
    b(C::Transcript, &[ch('p')], A::ShowPatch, Some("patch"), "show the session patch"),
    b(C::Transcript, &[code(KeyCode::Tab)], A::NextItem, Some("select"), "select the next reasoning or tool result"),
    b(C::Transcript, &[code(KeyCode::BackTab)], A::PrevItem, None, "select the previous one"),
    b(C::Transcript, &[code(KeyCode::Enter), ch('o')], A::ToggleItem, Some("expand"), "expand or collapse the selected item"),
    b(C::Transcript, &[ch('r')], A::ToggleReasoning, None, "show or hide all reasoning"),
    b(C::Transcript, &[ch('k'), code(KeyCode::Up)], A::ScrollUp, None, "scroll up"),
    b(C::Transcript, &[ch('j'), code(KeyCode::Down)], A::ScrollDown, None, "scroll down"),
    b(C::Transcript, &[code(KeyCode::PageUp), ctrl('b')], A::PageUp, None, "scroll a page up"),
    b(C::Transcript, &[code(KeyCode::PageDown), ctrl('f')], A::PageDown, None, "scroll a page down"),
    b(C::Transcript, &[ch('g'), code(KeyCode::Home)], A::Top, None, "go to the top"),
    b(C::Transcript, &[ch('G'), code(KeyCode::End)], A::Bottom, None, "go to the end and follow new output"),
    // Text entry.
    b(C::Input, &[code(KeyCode::Enter)], A::Submit, Some("send"), "send the message"),
    b(C::Input, &[code(KeyCode::Esc)], A::Cancel, Some("leave"), "leave the message line (the text stays)"),
    b(C::Feedback, &[code(KeyCode::Enter)], A::Submit, Some("send rejection"), "reject with this feedback (may be empty)"),
    b(C::Feedback, &[code(KeyCode::Esc)], A::Cancel, Some("back"), "back to the review"),
    b(C::SavePath, &[code(KeyCode::Enter)], A::Submit, Some("save"), "save the patch to this file"),
    b(C::SavePath, &[code(KeyCode::Esc)], A::Cancel, Some("back"), "back to the patch"),
    // Questions and help.
    b(C::Confirm, &[ch('y')], A::Yes, Some("yes"), "yes"),
    b(C::Confirm, &[ch('n'), code(KeyCode::Esc)], A::No, Some("no"), "no"),
    b(C::Help, &[code(KeyCode::Esc), ch('?'), ch('q')], A::Cancel, Some("close"), "close the help"),
];

/// Text editing keys, for the help overlay (handled by the text field itself).
pub const EDITING_HELP: &str =
    "typing edits the text; ← → Home End move; Backspace Delete erase; Ctrl-U clears";

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
pub fn hints(contexts: &[Context]) -> Vec<(String, &'static str)> {
    contexts
        .iter()
        .flat_map(|ctx| BINDINGS.iter().filter(move |bd| bd.context == *ctx))
        .filter_map(|bd| Some((bd.keys.first()?.label(), bd.hint?)))
        .collect()
}

/// Every binding grouped by context, for the help overlay: (title, [(keys, help)]).
pub fn help_sections() -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    let mut out: Vec<(&'static str, Vec<(String, &'static str)>)> = Vec::new();
    for bd in BINDINGS {
        let keys: Vec<String> = bd.keys.iter().map(Key::label).collect();
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn specific_contexts_win() {
        let esc = key(KeyCode::Esc);
        assert_eq!(lookup(&[C::Diff, C::Browse], &esc), Some(A::Reject));
        assert_eq!(lookup(&[C::Transcript, C::Browse], &esc), Some(A::Interrupt));
        let n = key(KeyCode::Char('n'));
        assert_eq!(lookup(&[C::Replay, C::Transcript], &n), Some(A::ReplayNext));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(lookup(&[C::Input, C::Anywhere], &ctrl_c), Some(A::Quit));
        assert_eq!(lookup(&[C::Input, C::Anywhere], &key(KeyCode::Char('q'))), None);
    }

    #[test]
    fn no_key_is_bound_twice_in_a_context() {
        for (i, a) in BINDINGS.iter().enumerate() {
            for bb in &BINDINGS[i + 1..] {
                if a.context == bb.context {
                    for k in a.keys {
                        assert!(!bb.keys.contains(k), "{:?} bound twice in {:?}", k, a.context);
                    }
                }
            }
        }
    }

    #[test]
    fn every_binding_has_help() {
        assert!(BINDINGS.iter().all(|bd| !bd.help.is_empty() && !bd.keys.is_empty()));
        let sections = help_sections();
        assert!(sections.iter().any(|(t, _)| *t == "Reviewing a file change"));
    }
}
