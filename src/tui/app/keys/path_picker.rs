//! The file picker's keys ([`PathPickerKeys`]): choose a path (↑ ↓), put it on the message
//! line in place of the `@` word (Enter), close it (Esc); any other key is the message
//! line's, where the picker's query is typed. The repository's paths and the choice
//! (`PathPicker::handle`) are `app/pickers.rs`'.

use super::super::pickers::Pick;
use super::super::{App, Effect};
use super::composer::ComposerKeys;
use crate::tui::keymap::Action;

/// The file picker in front (the cursor is in the word of the `@` that opened it).
pub(super) struct PathPickerKeys<'a>(pub(super) &'a mut App);

impl PathPickerKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        let app = self.0;
        let n = app.path_matches().len();
        let pick = match app.picker.as_mut() {
            Some(p) => p.handle(action, n),
            None => Pick::Pass,
        };
        match pick {
            Pick::Stay | Pick::Complete(_) => {}
            Pick::Close => app.picker = None,
            Pick::Take(i) => app.take_path(i),
            Pick::Pass => return ComposerKeys(app).handle(action),
        }
        Vec::new()
    }
}

impl App {
    /// Enter in the file picker: path `i` in place of the `@` word (quoted when it has a
    /// space), and the picker closed.
    fn take_path(&mut self, i: usize) {
        let chosen = self.path_matches().get(i).cloned();
        let typed = self.picker_query().map_or(0, |q| q.chars().count() + 1);
        self.picker = None;
        if let Some(path) = chosen {
            let path = if path.contains(char::is_whitespace) {
                format!("\"{path}\"")
            } else {
                path
            };
            self.composer.input.delete_back(typed);
            self.composer.input.insert_str(&format!("{path} "));
        }
        self.refresh_pickers();
    }
}
