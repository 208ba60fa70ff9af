//! The command palette and the file picker.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, code, ctrl, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const PICKERS: &[Binding] = &[
    // The command palette and the file picker.
    b(
        C::Palette,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("run"),
        "run the chosen command, or send the chosen prompt file with the words typed after its name (when nothing matches, the text is sent as a message)",
    ),
    b(
        C::Palette,
        &[code(KeyCode::Tab)],
        A::Complete,
        Some("complete"),
        "put the chosen name on the message line, to type a prompt file's arguments after it",
    ),
    b(
        C::Palette,
        &[code(KeyCode::Up), ctrl('p')],
        A::PrevEntry,
        Some("choose"),
        "choose the entry above",
    ),
    b(
        C::Palette,
        &[code(KeyCode::Down), ctrl('n')],
        A::NextEntry,
        None,
        "choose the entry below",
    ),
    b(
        C::Palette,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("close"),
        "close the palette; the text stays, and Enter sends it as a message",
    ),
    b(
        C::PathPicker,
        &[code(KeyCode::Enter), code(KeyCode::Tab)],
        A::Submit,
        Some("insert"),
        "put the chosen path on the message line in place of @ and what was typed after it",
    ),
    b(
        C::PathPicker,
        &[code(KeyCode::Up), ctrl('p')],
        A::PrevEntry,
        Some("choose"),
        "choose the path above",
    ),
    b(
        C::PathPicker,
        &[code(KeyCode::Down), ctrl('n')],
        A::NextEntry,
        None,
        "choose the path below",
    ),
    b(
        C::PathPicker,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("close"),
        "close the picker; the text stays as typed",
    ),
    b(
        C::Feedback,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("send rejection"),
        "reject with this feedback (may be empty)",
    ),
    b(
        C::Feedback,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the review",
    ),
    b(
        C::Comment,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("add comment"),
        "put the comment on the line (in the session review: the lines or the file); an empty one removes it",
    ),
    b(
        C::Comment,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the diff; the line's comment stays as it was",
    ),
    b(
        C::ReviewSummary,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("submit review"),
        "submit the review with this summary (may be empty)",
    ),
    b(
        C::ReviewSummary,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the review; nothing is sent",
    ),
    b(
        C::SavePath,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("save"),
        "save the patch to this file",
    ),
    b(
        C::SavePath,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the patch",
    ),
    b(
        C::Search,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("find"),
        "find the first match from the top of the view down (wrapping)",
    ),
    b(
        C::Search,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the transcript, no search",
    ),
];
