//! Replay, and the transcript in the modal keys.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, ctrl, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const TRANSCRIPT: &[Binding] = &[
    // Replay.
    b(
        C::Replay,
        &[ch('n'), ch(' '), code(KeyCode::Right)],
        A::ReplayNext,
        Some("next turn"),
        "show the next turn",
    ),
    b(
        C::Replay,
        &[ch('b'), code(KeyCode::Left)],
        A::ReplayPrev,
        Some("previous turn"),
        "go back one turn",
    ),
    b(
        C::Replay,
        &[ch('e')],
        A::ReplayEnd,
        Some("to the end"),
        "show the whole session",
    ),
    // The transcript.
    b(
        C::Transcript,
        &[code(KeyCode::Esc)],
        A::Interrupt,
        Some("interrupt"),
        "interrupt the model or the running command",
    )
    .named("interrupt"),
    b(
        C::Transcript,
        &[ch('s')],
        A::ToggleStepMode,
        Some("step mode"),
        "step mode on/off: pause after every turn",
    ),
    b(
        C::Transcript,
        &[ch('n')],
        A::StepOnce,
        Some("next turn"),
        "in step mode: run one more turn",
    ),
    b(
        C::Transcript,
        &[ch('i')],
        A::FocusInput,
        Some("message"),
        "type a message to the model (when it waits for one)",
    ),
    b(
        C::Transcript,
        &[ch('p')],
        A::ShowPatch,
        Some("patch"),
        "show the session patch",
    ),
    b(
        C::Transcript,
        &[code(KeyCode::Tab)],
        A::NextItem,
        Some("select"),
        "select the next message, reasoning or tool call",
    ),
    b(
        C::Transcript,
        &[ch('[')],
        A::PrevItem,
        None,
        "select the previous one",
    ),
    b(
        C::Transcript,
        &[code(KeyCode::Enter), ch('o')],
        A::ToggleItem,
        Some("expand"),
        "expand or collapse the selected item",
    ),
    b(
        C::Transcript,
        &[ch('c')],
        A::Copy,
        Some("copy"),
        "copy the selected item (else the last answer) as clean text: to the clipboard through the terminal (OSC 52), or to a file when the terminal cannot",
    ),
    b(
        C::Transcript,
        &[ch('/')],
        A::Search,
        Some("search"),
        "search the transcript (n and N then move between the matches)",
    ),
    b(
        C::Transcript,
        &[ch('R')],
        A::Rewind,
        Some("rewind"),
        "rewind to an earlier turn: the conversation, the files and the model's memory go back to the end of that turn (asks first)",
    )
    .named("rewind"),
    b(
        C::Transcript,
        &[ch('r')],
        A::ToggleReasoning,
        None,
        "show reasoning collapsed, in full, or hidden (each press the next; [interface] reasoning sets the first)",
    ),
    b(
        C::Transcript,
        &[ch('k'), code(KeyCode::Up)],
        A::ScrollUp,
        None,
        "scroll up",
    ),
    b(
        C::Transcript,
        &[ch('j'), code(KeyCode::Down)],
        A::ScrollDown,
        None,
        "scroll down",
    ),
    b(
        C::Transcript,
        &[code(KeyCode::PageUp), ctrl('b')],
        A::PageUp,
        None,
        "scroll a page up",
    ),
    b(
        C::Transcript,
        &[code(KeyCode::PageDown), ctrl('f')],
        A::PageDown,
        None,
        "scroll a page down",
    ),
    b(
        C::Transcript,
        &[ch('g'), code(KeyCode::Home)],
        A::Top,
        None,
        "go to the top",
    ),
    b(
        C::Transcript,
        &[ch('G'), code(KeyCode::End)],
        A::Bottom,
        None,
        "go to the end and follow new output",
    ),
];
