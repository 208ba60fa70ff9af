//! The command palette's keys ([`PaletteKeys`]): choose an entry (↑ ↓), complete its name
//! (Tab), run it (Enter: a command of the key table in its binding's context, or a prompt
//! file sent as the message), close it (Esc); any other key is the message line's, where the
//! palette's query is typed. The palette's entries are `app/pickers.rs`'.

use super::super::pickers::{step, Entry, Palette};
use super::super::{App, Effect};
use super::composer::Composer;
use crate::tui::keymap::Action;
use crate::tui::transcript::Level;

/// The command palette in front (the message line starts with the `/` that opened it).
pub(super) struct PaletteKeys<'a>(pub(super) &'a mut App);

impl PaletteKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        match action {
            Action::Submit
            | Action::Cancel
            | Action::Complete
            | Action::PrevEntry
            | Action::NextEntry => self.0.act_palette(action),
            _ => Composer(self.0).handle(action),
        }
    }
}

impl App {
    /// A key of the palette's own.
    fn act_palette(&mut self, action: Action) -> Vec<Effect> {
        let n = self.palette_entries().len();
        let Some(selected) = self.palette.as_ref().map(|p| p.selected) else {
            return Vec::new();
        };
        let choose = |to| Some(Palette { selected: to });
        match action {
            Action::PrevEntry => self.palette = choose(step(selected, n, false)),
            Action::NextEntry => self.palette = choose(step(selected, n, true)),
            Action::Cancel => self.palette = None,
            Action::Complete => {
                let chosen = self
                    .palette_entries()
                    .get(selected)
                    .map(|e| (e.name().to_string(), matches!(e, Entry::Prompt(_))));
                let Some((name, prompt)) = chosen else {
                    return Vec::new();
                };
                let args = self
                    .palette_query()
                    .and_then(|(_, a)| a)
                    .unwrap_or_default();
                let space = if prompt && args.is_empty() { " " } else { "" };
                let text = format!("/{name}{space}{args}");
                self.input.set_text(&text);
                self.refresh_pickers();
            }
            Action::Submit => return self.run_palette_entry(),
            _ => {}
        }
        Vec::new()
    }

    /// Enter in the palette: run the chosen command or send the chosen prompt file; with
    /// nothing chosen, send the text as it is.
    fn run_palette_entry(&mut self) -> Vec<Effect> {
        let selected = self.palette.as_ref().map_or(0, |p| p.selected);
        let chosen = match self.palette_entries().get(selected) {
            Some(Entry::Command(bd)) => Ok(*bd),
            Some(Entry::Prompt(p)) => Err(Some((*p).clone())),
            None => Err(None),
        };
        self.palette = None;
        match chosen {
            Ok(bd) => {
                self.input.take();
                self.pastes.clear();
                self.act(bd.action, bd.context)
            }
            Err(Some(prompt)) => {
                let text = self.message_text();
                let args = text
                    .strip_prefix('/')
                    .and_then(|t| t.find(char::is_whitespace).map(|i| &t[i..]))
                    .unwrap_or_default();
                let expanded = prompt.expand(args);
                if expanded.trim().is_empty() {
                    self.transcript.notice(
                        Level::Warning,
                        format!("the prompt file {} has no text to send", prompt.name),
                    );
                    return Vec::new();
                }
                self.pastes.clear();
                self.input.set_text(&expanded);
                self.send_message()
            }
            Err(None) => self.send_message(),
        }
    }
}
