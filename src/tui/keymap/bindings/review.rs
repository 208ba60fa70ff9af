//! Reviewing a change or a command: something folded, a file change, a command and the
//! words of a command rule.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const REVIEW: &[Binding] = &[
    // Something folded in a review: Enter opens it (then approves, as it does elsewhere).
    b(
        C::Folded,
        &[code(KeyCode::Enter)],
        A::Unfold,
        Some("open"),
        "open the lock or generated file shown folded to one line; in a change's review, with the line cursor on a hunk's first or last line, show the unchanged lines folded beside it (`… N lines …`)",
    ),
    // Reviewing a file change.
    b(
        C::Diff,
        &[ch('y'), code(KeyCode::Enter)],
        A::Approve,
        Some("approve"),
        "approve the change (only the selected hunks, if some are deselected)",
    ),
    b(
        C::Diff,
        &[ch('a')],
        A::ApproveForSession,
        Some("approve all edits"),
        "approve, and approve every further edit in this session",
    ),
    b(
        C::Diff,
        &[code(KeyCode::Esc), ch('n'), ch('x')],
        A::Reject,
        Some("reject"),
        "reject, and tell the model why",
    ),
    b(
        C::Diff,
        &[ch(' ')],
        A::ToggleHunk,
        Some("toggle hunk"),
        "select or deselect the current hunk",
    ),
    b(
        C::Diff,
        &[ch(']')],
        A::NextHunk,
        Some("next hunk"),
        "go to the next hunk",
    ),
    b(
        C::Diff,
        &[ch('[')],
        A::PrevHunk,
        None,
        "go to the previous hunk",
    ),
    b(
        C::Diff,
        &[ch('e')],
        A::OpenEditor,
        Some("edit"),
        "open the text (with the selected hunks) in $EDITOR; what you save is reviewed again (an unchanged or empty file changes nothing)",
    ),
    b(
        C::Diff,
        &[ch('p')],
        A::ApprovePartly,
        None,
        "approve the selected hunks and tell the model why the others were dropped",
    ),
    b(
        C::Diff,
        &[ch('m')],
        A::Comment,
        Some("comment"),
        "comment on the line under the cursor (again: edit or, emptied, remove the comment); the comments go to the model with your decision",
    ),
    b(
        C::Diff,
        &[ch('c')],
        A::Copy,
        None,
        "copy the proposed change as a unified diff",
    ),
    b(
        C::Diff,
        &[ch('k'), code(KeyCode::Up)],
        A::ScrollUp,
        None,
        "move the line cursor up, the view following it (with the focus on the conversation: scroll it)",
    ),
    b(
        C::Diff,
        &[ch('j'), code(KeyCode::Down)],
        A::ScrollDown,
        None,
        "move the line cursor down, the view following it (with the focus on the conversation: scroll it)",
    ),
    b(
        C::Diff,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "scroll the conversation above the change a page up (full screen: the line cursor)",
    ),
    b(
        C::Diff,
        &[code(KeyCode::PageDown)],
        A::PageDown,
        None,
        "scroll the conversation above the change a page down (full screen: the line cursor)",
    ),
    b(
        C::Diff,
        &[code(KeyCode::Tab)],
        A::SwitchPane,
        None,
        "move the focus between the diff and the conversation (the arrow keys and j k then scroll it)",
    ),
    b(
        C::Diff,
        &[ch('f')],
        A::FullScreen,
        Some("full screen"),
        "show the change full screen, the turn's last words above it (again: dock it below the conversation)",
    ),
    b(
        C::Diff,
        &[ch('t')],
        A::ToggleSplit,
        Some("split/unified"),
        "show the diff side by side (old left, new right) or unified; `[interface] diff` chooses where it starts",
    ),
    // Reviewing a command.
    b(
        C::Command,
        &[ch('y'), code(KeyCode::Enter)],
        A::Approve,
        Some("run it"),
        "approve: run the command",
    ),
    b(
        C::Command,
        &[ch('a')],
        A::ApproveForSession,
        Some("allow all commands"),
        "approve, and every further command in this session",
    ),
    b(
        C::Command,
        &[code(KeyCode::Esc), ch('n'), ch('x')],
        A::Reject,
        Some("reject"),
        "do not run it, and tell the model why",
    ),
    b(
        C::Command,
        &[ch('p')],
        A::ChoosePrefix,
        Some("don't ask again for…"),
        "approve, and don't ask again for commands starting with the words you choose (this session, or saved for the repository)",
    ),
    b(
        C::Command,
        &[ch('e')],
        A::OpenEditor,
        Some("edit"),
        "edit the command in $EDITOR before it runs (the model is told what ran)",
    ),
    b(
        C::Command,
        &[ch('c')],
        A::Copy,
        None,
        "copy the command",
    ),
    b(
        C::Command,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "scroll the conversation above the command a page up",
    ),
    b(
        C::Command,
        &[code(KeyCode::PageDown)],
        A::PageDown,
        None,
        "scroll the conversation above the command a page down",
    ),
    // Choosing a command rule.
    b(
        C::Prefix,
        &[code(KeyCode::Left), ch('h')],
        A::Fewer,
        Some("fewer words"),
        "one word fewer in the prefix",
    ),
    b(
        C::Prefix,
        &[code(KeyCode::Right), ch('l')],
        A::More,
        Some("more words"),
        "one word more in the prefix",
    ),
    b(
        C::Prefix,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("this session"),
        "run it; commands starting with these words run without asking for the rest of the session",
    ),
    b(
        C::Prefix,
        &[ch('s')],
        A::SaveRule,
        Some("save for the repository"),
        "the same, and save the rule for this repository in the config file (lilypad doctor lists saved rules)",
    ),
    b(
        C::Prefix,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the command",
    ),
];
