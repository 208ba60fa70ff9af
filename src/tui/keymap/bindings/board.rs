//! The attempts board (`--attempts N`): its cards and its pieces.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const BOARD: &[Binding] = &[
    // The cards, one per attempt.
    b(
        C::Board,
        &[code(KeyCode::Left), ch('h')],
        A::PrevEntry,
        None,
        "choose the attempt to the left (round the ends)",
    ),
    b(
        C::Board,
        &[code(KeyCode::Right), ch('l'), code(KeyCode::Tab)],
        A::NextEntry,
        Some("choose"),
        "choose the attempt to the right (round the ends)",
    ),
    b(
        C::Board,
        &[
            ch('1'),
            ch('2'),
            ch('3'),
            ch('4'),
            ch('5'),
            ch('6'),
            ch('7'),
            ch('8'),
            ch('9'),
        ],
        A::ChooseAttempt,
        None,
        "choose attempt N",
    ),
    b(
        C::Board,
        &[code(KeyCode::Enter), ch('o')],
        A::OpenAttempt,
        Some("open its transcript (b back)"),
        "open the chosen attempt's own view, its transcript and reviews (b or q there brings the board back)",
    ),
    b(
        C::Board,
        &[ch('a')],
        A::ApplyPatch,
        Some("apply its patch"),
        "apply the chosen attempt's whole patch to your working tree, exactly as it was exported",
    ),
    b(
        C::Board,
        &[ch('p')],
        A::TakePieces,
        Some("take pieces"),
        "open the pieces: every hunk of every attempt's patch, to take from several",
    ),
    b(
        C::Board,
        &[ch('q')],
        A::Quit,
        Some("quit"),
        "end every attempt and quit (asks once while attempts run or nothing is applied; Ctrl-C quits at once)",
    ),
    // An attempt's own view (the interface routes these before the attempt's keys).
    b(
        C::Attempt,
        &[ch('b'), ch('q')],
        A::BackToBoard,
        None,
        "the board in front again (the attempt goes on)",
    ),
    // The pieces.
    b(
        C::Pieces,
        &[code(KeyCode::Up), ch('k')],
        A::PrevEntry,
        None,
        "the piece above",
    ),
    b(
        C::Pieces,
        &[code(KeyCode::Down), ch('j')],
        A::NextEntry,
        Some("move"),
        "the piece below",
    ),
    b(
        C::Pieces,
        &[ch(' ')],
        A::ToggleHunk,
        Some("take/drop"),
        "take or drop the focused piece (a taken piece that conflicts with another is marked)",
    ),
    b(
        C::Pieces,
        &[ch('t')],
        A::TakeAttempt,
        Some("take all of its attempt"),
        "take every piece of the focused piece's attempt, and drop the others",
    ),
    b(
        C::Pieces,
        &[ch('a')],
        A::ApplyPatch,
        Some("apply what is taken"),
        "apply what is taken as one patch (an attempt's whole patch when all of it and nothing else is taken)",
    ),
    b(
        C::Pieces,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "scroll the focused piece's diff a page up",
    ),
    b(
        C::Pieces,
        &[code(KeyCode::PageDown)],
        A::PageDown,
        Some("scroll the diff"),
        "scroll the focused piece's diff a page down (another piece starts at its top)",
    ),
    b(
        C::Pieces,
        &[code(KeyCode::Esc), ch('q')],
        A::Cancel,
        Some("back"),
        "back to the cards, what is taken kept",
    ),
];
