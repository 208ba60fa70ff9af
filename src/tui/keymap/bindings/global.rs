//! The keys that work everywhere, and outside text entry.
//!
//! Part of the one key table ([`super::BINDINGS`]); order matters within a context.

use crate::tui::keymap::{b, ch, code, ctrl, Action, Binding, Context};
use crossterm::event::KeyCode;

use Action as A;
use Context as C;

pub(super) const GLOBAL: &[Binding] = &[
    b(
        C::Anywhere,
        &[ctrl('c')],
        A::InterruptOrQuit,
        None,
        "interrupt the agent if it works, then quit (asks first when work would be lost; Ctrl-C again at the question quits)",
    ),
    b(
        C::Anywhere,
        &[ctrl('z')],
        A::Suspend,
        None,
        "suspend lilypad, as Ctrl-Z does in a shell (the agent pauses with it; fg brings the screen back)",
    )
    .named("suspend"),
    b(
        C::Anywhere,
        &[code(KeyCode::BackTab)],
        A::CycleApprovals,
        None,
        "the next approval policy, from now on (ask for edits and commands; edits without asking; everything without asking; edits and commands refused); the status line shows it",
    )
    .named("approvals"),
    b(
        C::Browse,
        &[ch('?')],
        A::Help,
        Some("help"),
        "show or hide this help",
    ),
    b(
        C::Browse,
        &[ch('q')],
        A::Quit,
        Some("quit"),
        "quit (asks first while the agent works or a patch is pending; with review comments not sent, warns first and quits on a second press)",
    ),
];
