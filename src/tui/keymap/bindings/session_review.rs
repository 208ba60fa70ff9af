//! The session patch, reviewed as a pull request.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const SESSION_REVIEW: &[Binding] = &[
    // The session patch, reviewed as a pull request.
    b(
        C::Patch,
        &[ch('a')],
        A::ApplyPatch,
        Some("apply to your tree"),
        "approve: apply the patch to your working tree (git apply); pending comments go to the model",
    ),
    b(
        C::Patch,
        &[ch('w')],
        A::SavePatch,
        Some("save as file"),
        "approve: save the patch as a file; pending comments go to the model",
    ),
    b(
        C::Patch,
        &[ch('d')],
        A::DiscardPatch,
        Some("discard"),
        "discard the patch (pending comments go to the model)",
    ),
    b(
        C::Patch,
        &[ch('r')],
        A::RequestChanges,
        Some("request changes"),
        "request changes: every pending comment (file, line, side, the quoted line) and the summary you type last go to the model as one message, and the agent goes on from it",
    )
    .named("request"),
    b(
        C::Patch,
        &[ch('C')],
        A::CommentReview,
        None,
        "submit as comments: record the pending comments (and a summary) in the review without sending them",
    ),
    b(
        C::Patch,
        &[ch('m')],
        A::Comment,
        Some("comment"),
        "comment on the line under the cursor, or on the lines selected with v (again: edit the pending comment; emptied, it is deleted)",
    ),
    b(
        C::Patch,
        &[ch('v')],
        A::SelectRange,
        None,
        "start selecting lines (move the cursor, then m comments on them; v or Esc drops the selection)",
    ),
    b(
        C::Patch,
        &[ch('M')],
        A::CommentFile,
        None,
        "comment on the shown file (again: edit the pending comment; emptied, it is deleted)",
    ),
    b(
        C::Patch,
        &[ch(']')],
        A::NextHunk,
        Some("next file"),
        "show the next file",
    ),
    b(
        C::Patch,
        &[ch('[')],
        A::PrevHunk,
        None,
        "show the previous file",
    ),
    b(
        C::Patch,
        &[ch('t')],
        A::ToggleSplit,
        Some("split/unified"),
        "show the diff side by side (old left, new right) or unified, as in a change's review; `[interface] diff` chooses where it starts",
    ),
    b(
        C::Patch,
        &[code(KeyCode::Tab)],
        A::SwitchPane,
        None,
        "move the focus between the file list and the diff",
    ),
    b(
        C::Patch,
        &[code(KeyCode::Enter)],
        A::OpenFile,
        None,
        "show the file chosen in the list",
    ),
    b(
        C::Patch,
        &[ch('x')],
        A::ToggleViewed,
        None,
        "mark the file viewed, or not (showing a file marks it viewed)",
    ),
    b(
        C::Patch,
        &[ch('s')],
        A::ToggleScope,
        None,
        "show the last turn's changes, or the whole session's",
    ),
    b(
        C::Patch,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "drop the selection; else back to the transcript, the pending comments kept (decide later: p, or Alt-P with the default keys); with comments not sent, the first Esc warns and the second leaves",
    ),
    b(
        C::Patch,
        &[ch('c')],
        A::Copy,
        None,
        "copy the whole patch",
    ),
    b(
        C::Patch,
        &[ch('k'), code(KeyCode::Up)],
        A::ScrollUp,
        None,
        "move the line cursor up, the view following it (with the focus on the file list: the file chosen)",
    ),
    b(
        C::Patch,
        &[ch('j'), code(KeyCode::Down)],
        A::ScrollDown,
        None,
        "move the line cursor down, the view following it (with the focus on the file list: the file chosen)",
    ),
    b(
        C::Patch,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "move the line cursor a page up",
    ),
    b(
        C::Patch,
        &[code(KeyCode::PageDown)],
        A::PageDown,
        None,
        "move the line cursor a page down",
    ),
];
