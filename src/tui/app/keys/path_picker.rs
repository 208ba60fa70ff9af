//! The file picker's keys ([`PathPickerKeys`]): choose a path (↑ ↓), put it on the message
//! line in place of the `@` word (Enter), close it (Esc); any other key is the message
//! line's, where the picker's query is typed. The repository's paths are `app/pickers.rs`'.

use super::super::pickers::step;
use super::super::{App, Effect};
use super::composer::Composer;
use crate::tui::keymap::Action;

/// The file picker in front (the cursor is in the word of the `@` that opened it).
pub(super) struct PathPickerKeys<'a>(pub(super) &'a mut App);

impl PathPickerKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        match action {
            Action::Submit | Action::Cancel | Action::PrevEntry | Action::NextEntry => {
                self.0.act_picker(action)
            }
            _ => Composer(self.0).handle(action),
        }
    }
}

impl App {
    /// A key of the file picker's own.
    fn act_picker(&mut self, action: Action) -> Vec<Effect> {
        let n = self.path_matches().len();
        let Some(picker) = self.picker.as_mut() else {
            return Vec::new();
        };
        match action {
            Action::PrevEntry => picker.selected = step(picker.selected, n, false),
            Action::NextEntry => picker.selected = step(picker.selected, n, true),
            Action::Cancel => self.picker = None,
            Action::Submit => {
                let selected = picker.selected;
                let chosen = self.path_matches().get(selected).cloned();
                let typed = self.picker_query().map_or(0, |q| q.chars().count() + 1);
                self.picker = None;
                if let Some(path) = chosen {
                    let path = if path.contains(char::is_whitespace) {
                        format!("\"{path}\"")
                    } else {
                        path
                    };
                    self.input.delete_back(typed);
                    self.input.insert_str(&format!("{path} "));
                }
                self.refresh_pickers();
            }
            _ => {}
        }
        Vec::new()
    }
}
