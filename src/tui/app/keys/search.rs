//! The transcript search's keys: Enter searches for what is typed, `n` / `N` visit the next
//! and previous match, Esc ends the search; with the matches shown, the transcript's own keys
//! still work. The search's state and finding matches are `app/search.rs`'.

use super::super::{App, Effect};
use super::transcript::TranscriptKeys;
use crate::tui::keymap::Action;
use crate::tui::Direction;

/// The transcript search in front: its field being typed, or its matches visited.
pub(super) struct SearchKeys<'a>(pub(super) &'a mut App);

impl SearchKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        let app = self.0;
        let typing = app.search.as_ref().is_some_and(|s| s.field.is_some());
        match action {
            Action::Submit if typing => app.submit_search(),
            Action::Cancel => {
                app.end_search();
                Vec::new()
            }
            Action::NextMatch => app.step_search(Direction::Forward),
            Action::PrevMatch => app.step_search(Direction::Back),
            _ if typing => Vec::new(),
            _ => TranscriptKeys(app).handle(action),
        }
    }
}
