//! A search, and typing text: the message line, feedback, comments, summaries, paths.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{alt, alt_code, b, ch, code, ctrl, shift_code, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const ENTRY: &[Binding] = &[
    // A search.
    b(
        C::Found,
        &[ch('n')],
        A::NextMatch,
        Some("next match"),
        "go to the next match further down (wraps to the top)",
    ),
    b(
        C::Found,
        &[ch('N')],
        A::PrevMatch,
        Some("previous match"),
        "go to the previous match further up (wraps to the end)",
    ),
    b(
        C::Found,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("end search"),
        "end the search (the view stays where it is)",
    ),
    // Text entry.
    b(
        C::Input,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("send"),
        "send the message",
    ),
    b(
        C::Input,
        &[ctrl('j')],
        A::Newline,
        Some("new line"),
        "start a new line in the message",
    ),
    b(
        C::Input,
        &[alt_code(KeyCode::Enter)],
        A::Newline,
        None,
        "start a new line, too",
    ),
    b(
        C::Input,
        &[shift_code(KeyCode::Enter)],
        A::Newline,
        None,
        "start a new line, too, where the terminal tells Shift-Enter from Enter",
    ),
    b(
        C::Input,
        &[code(KeyCode::Up)],
        A::HistoryPrev,
        Some("history"),
        "on the first line: the message sent before this one in this repository (the history \
         outlives the session); elsewhere the line above",
    ),
    b(
        C::Input,
        &[code(KeyCode::Down)],
        A::HistoryNext,
        None,
        "on the last line: the next message in the history, and after the newest the text you \
         were typing; elsewhere the line below",
    ),
    b(
        C::Input,
        &[ctrl('w')],
        A::DeleteWordBack,
        None,
        "delete the word before the cursor",
    ),
    b(
        C::Input,
        &[ctrl('k')],
        A::KillToLineEnd,
        None,
        "delete to the end of the line (at its end: join the next line)",
    ),
    b(
        C::Input,
        &[alt('b')],
        A::WordLeft,
        None,
        "go to the start of the word before the cursor",
    ),
    b(
        C::Input,
        &[alt('f')],
        A::WordRight,
        None,
        "go to the end of the word after the cursor",
    ),
    b(
        C::Input,
        &[code(KeyCode::Home), ctrl('a')],
        A::LineStart,
        None,
        "go to the start of the line",
    ),
    b(
        C::Input,
        &[code(KeyCode::End), ctrl('e')],
        A::LineEnd,
        None,
        "go to the end of the line",
    ),
    b(
        C::Input,
        &[ctrl('r')],
        A::SearchHistory,
        None,
        "search the messages sent in this repository, newest first (Ctrl-R again: an older one)",
    )
    .named("history"),
    b(
        C::Input,
        &[ctrl('g')],
        A::EditDraft,
        Some("editor"),
        "edit the message in $VISUAL or $EDITOR; what you save becomes the message (an editor that fails keeps it as it was)",
    )
    .named("editor"),
    b(
        C::Input,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("leave"),
        "leave the message line (the text stays; keys = \"modal\")",
    ),
    b(
        C::HistorySearch,
        &[ctrl('r')],
        A::OlderMatch,
        Some("older"),
        "the next older message that holds what is typed",
    ),
    b(
        C::HistorySearch,
        &[code(KeyCode::Enter)],
        A::Submit,
        Some("take it"),
        "put the message found on the message line, to edit or send",
    ),
    b(
        C::HistorySearch,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the message line as it was",
    ),
];
