//! The key map itself: every binding with its context, keys, action, footer hint and help
//! text, one file per group of contexts (in the order the help overlay lists them). Edit there
//! to change a key; hints, the help overlay and docs/interface.md follow.

use super::Binding;

mod board;
mod chat;
mod entry;
mod global;
mod overlays;
mod pickers;
mod review;
mod session_review;
mod transcript;

/// The groups, in table order.
const PARTS: &[&[Binding]] = &[
    global::GLOBAL,
    review::REVIEW,
    session_review::SESSION_REVIEW,
    transcript::TRANSCRIPT,
    chat::CHAT,
    entry::ENTRY,
    pickers::PICKERS,
    overlays::OVERLAYS,
    board::BOARD,
];

/// Bindings in all the groups.
const LEN: usize = global::GLOBAL.len()
    + review::REVIEW.len()
    + session_review::SESSION_REVIEW.len()
    + transcript::TRANSCRIPT.len()
    + chat::CHAT.len()
    + entry::ENTRY.len()
    + pickers::PICKERS.len()
    + overlays::OVERLAYS.len()
    + board::BOARD.len();

/// The groups one after another, as one array (at compile time).
const fn concat() -> [Binding; LEN] {
    // Any binding fills the array before it is overwritten.
    let mut out = [global::GLOBAL[0]; LEN];
    let (mut part, mut n) = (0, 0);
    while part < PARTS.len() {
        let mut i = 0;
        while i < PARTS[part].len() {
            out[n] = PARTS[part][i];
            n += 1;
            i += 1;
        }
        part += 1;
    }
    out
}

/// The key map. Order matters within a context: the first matching binding wins, and hints
/// appear in this order.
pub const BINDINGS: &[Binding] = &concat();
