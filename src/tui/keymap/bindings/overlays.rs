//! Questions, the full context's choice, rewinding, and the help overlay.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, ctrl, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const OVERLAYS: &[Binding] = &[
    // Questions and help.
    b(
        C::Confirm,
        &[ch('y'), ch('q'), ctrl('c')],
        A::Yes,
        Some("yes"),
        "yes (at the quit question, q and Ctrl-C quit too)",
    ),
    b(
        C::Confirm,
        &[ch('n'), code(KeyCode::Esc)],
        A::No,
        Some("no"),
        "no",
    ),
    b(
        C::ContextChoice,
        &[ch('f'), code(KeyCode::Enter)],
        A::ContinueFresh,
        Some("fresh conversation"),
        "fresh conversation: task, patch so far, message",
    ),
    b(
        C::ContextChoice,
        &[ch('d')],
        A::DropOldResults,
        Some("drop old results"),
        "drop the oldest tool results, then send",
    ),
    b(
        C::ContextChoice,
        &[code(KeyCode::Esc)],
        A::Cancel,
        Some("back"),
        "back to the message, unsent",
    ),
    b(
        C::Rewind,
        &[code(KeyCode::Left), ch('h'), code(KeyCode::Up), ch('k')],
        A::EarlierTurn,
        Some("earlier"),
        "choose the turn before",
    ),
    b(
        C::Rewind,
        &[code(KeyCode::Right), ch('l'), code(KeyCode::Down), ch('j')],
        A::LaterTurn,
        Some("later"),
        "choose the turn after",
    ),
    b(
        C::Rewind,
        &[ch('y'), code(KeyCode::Enter)],
        A::Submit,
        Some("rewind"),
        "rewind to the chosen turn (a running task is interrupted first)",
    ),
    b(
        C::Rewind,
        &[code(KeyCode::Esc), ch('n')],
        A::Cancel,
        Some("cancel"),
        "keep everything as it is",
    ),
    b(
        C::Help,
        &[code(KeyCode::Esc), ch('?'), ch('q'), code(KeyCode::F(1))],
        A::Cancel,
        Some("close"),
        "close the help",
    ),
    b(
        C::Help,
        &[ch('k'), code(KeyCode::Up)],
        A::ScrollUp,
        None,
        "scroll the help up",
    ),
    b(
        C::Help,
        &[ch('j'), code(KeyCode::Down)],
        A::ScrollDown,
        None,
        "scroll the help down",
    ),
    b(
        C::Help,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "scroll the help a page up",
    ),
    b(
        C::Help,
        &[code(KeyCode::PageDown), ch(' ')],
        A::PageDown,
        None,
        "scroll the help a page down",
    ),
];
