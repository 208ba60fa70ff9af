//! The transcript search's keys ([`SearchKeys`]): Enter searches for what is typed, `n` /
//! `N` visit the next and previous match, Esc ends the search; with the matches shown, the
//! transcript's own keys still work. The search's state and what its keys ask
//! (`Search::handle`) are `app/search.rs`'.

use super::super::search::Seek;
use super::super::{App, Effect};
use super::transcript::TranscriptKeys;
use crate::tui::keymap::Action;

/// The transcript search in front: its field being typed, or its matches visited.
pub(super) struct SearchKeys<'a>(pub(super) &'a mut App);

impl SearchKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        let app = self.0;
        let seek = match app.search.as_mut() {
            Some(s) => s.handle(action),
            None => Seek::Pass,
        };
        match seek {
            Seek::Stay => Vec::new(),
            Seek::Find(query) => app.submit_search(query),
            Seek::Visit(to) => app.step_search(to),
            Seek::End => {
                app.end_search();
                Vec::new()
            }
            Seek::Pass => TranscriptKeys(app).handle(action),
        }
    }
}
