//! The transcript with the message line in front (the default keys).
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{alt, alt_code, b, code, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const CHAT: &[Binding] = &[
    // The transcript with the message line in front (the default keys).
    b(
        C::Chat,
        &[code(KeyCode::Esc)],
        A::EscapeOrRewind,
        Some("interrupt"),
        "interrupt the model or the running command; on an empty message line, Esc twice rewinds to an earlier turn: the conversation, the files and the model's memory go back to the end of that turn (asks first)",
    ),
    b(
        C::Chat,
        &[code(KeyCode::F(1))],
        A::Help,
        Some("help"),
        "show or hide this help",
    )
    .named("help"),
    b(
        C::Chat,
        &[alt('q')],
        A::Quit,
        None,
        "quit (asks first while the agent works or a patch is pending; with review comments not sent, warns first and quits on a second press)",
    )
    .named("quit"),
    b(
        C::Chat,
        &[alt('p')],
        A::ShowPatch,
        Some("patch"),
        "show the session patch",
    )
    .named("patch"),
    b(
        C::Chat,
        &[alt('s')],
        A::ToggleStepMode,
        None,
        "step mode on/off: pause after every turn",
    )
    .named("step"),
    b(
        C::Chat,
        &[alt('n')],
        A::StepOnce,
        None,
        "in step mode: run one more turn",
    )
    .named("next"),
    b(
        C::Chat,
        &[code(KeyCode::Tab)],
        A::NextItem,
        None,
        "select the next message, reasoning or tool call",
    ),
    b(
        C::Chat,
        &[alt(',')],
        A::PrevItem,
        None,
        "select the previous one",
    ),
    b(
        C::Chat,
        &[alt('e')],
        A::ExportSession,
        None,
        "write the session so far as Markdown to a file in the session directory (as `lilypad export` does) and say where",
    )
    .named("export"),
    b(
        C::Chat,
        &[alt('k')],
        A::RunCheck,
        None,
        "run the repository's check command (`[sandbox] check`) in the sandbox, its output attached to the next message as `!cmd` does",
    )
    .named("check"),
    b(
        C::Chat,
        &[alt('o')],
        A::ToggleItem,
        None,
        "expand or collapse the selected item",
    ),
    b(
        C::Chat,
        &[alt('c')],
        A::Copy,
        None,
        "copy the selected item (else the last answer) as clean text",
    )
    .named("copy"),
    b(
        C::Chat,
        &[alt('/')],
        A::Search,
        None,
        "search the transcript (n and N then move between the matches)",
    )
    .named("search"),
    b(
        C::Chat,
        &[alt('r')],
        A::ToggleReasoning,
        None,
        "show reasoning collapsed, in full, or hidden",
    )
    .named("reasoning"),
    b(
        C::Chat,
        &[alt_code(KeyCode::Up)],
        A::ScrollUp,
        None,
        "scroll up",
    ),
    b(
        C::Chat,
        &[alt_code(KeyCode::Down)],
        A::ScrollDown,
        None,
        "scroll down",
    ),
    b(
        C::Chat,
        &[code(KeyCode::PageUp)],
        A::PageUp,
        None,
        "scroll a page up",
    ),
    b(
        C::Chat,
        &[code(KeyCode::PageDown)],
        A::PageDown,
        None,
        "scroll a page down",
    ),
    b(
        C::Chat,
        &[alt('<')],
        A::Top,
        None,
        "go to the top",
    ),
    b(
        C::Chat,
        &[alt('>')],
        A::Bottom,
        None,
        "go to the end and follow new output",
    ),
];
