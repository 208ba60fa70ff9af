//! The keys of what stands over everything: the help overlay (scrolling it, closing it) and
//! the questions (quit or not, how to go on with a full context, which turn to rewind to).
//! What a question's answer does to the session is `session`'s.

use super::super::{App, Effect};
use crate::tui::keymap::{Action, Context};

/// The help overlay in front.
pub(super) struct HelpKeys<'a>(pub(super) &'a mut App);

impl HelpKeys<'_> {
    /// Close it, or scroll it a row or a page (as many rows as its last drawing showed).
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        use Action as A;
        let app = self.0;
        let page = app.help_page.get().max(1) as isize;
        let d = match action {
            A::Cancel => {
                app.overlay = None;
                return Vec::new();
            }
            A::ScrollUp => -1,
            A::ScrollDown => 1,
            A::PageUp => -page,
            A::PageDown => page,
            _ => return Vec::new(),
        };
        app.help_scroll = (app.help_scroll as isize + d).max(0) as usize;
        Vec::new()
    }
}

/// A question in front: quit or not, the full context's choice, the turn to rewind to.
pub(super) struct Questions<'a>(pub(super) &'a mut App);

impl Questions<'_> {
    /// The answer `action` to the question `ctx` asks.
    pub(super) fn handle(self, action: Action, ctx: Context) -> Vec<Effect> {
        use Action as A;
        let app = self.0;
        match (ctx, action) {
            (Context::Confirm, A::Yes) => {
                app.overlay = None;
                app.quit_now()
            }
            (Context::Confirm, A::No) => {
                app.overlay = None;
                Vec::new()
            }
            (Context::ContextChoice, A::ContinueFresh | A::DropOldResults | A::Cancel) => {
                app.context_choice(action)
            }
            (Context::Rewind, A::EarlierTurn | A::LaterTurn | A::Submit | A::Cancel) => {
                app.rewind_choice(action)
            }
            _ => Vec::new(),
        }
    }
}
