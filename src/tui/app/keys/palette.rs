//! The command palette's keys ([`PaletteKeys`]): choose an entry (↑ ↓), complete its name
//! (Tab), run it (Enter: a command of the key table in its binding's context, or a prompt
//! file sent as the message), close it (Esc); any other key is the message line's, where the
//! palette's query is typed. The palette's entries and its choice (`Palette::handle`) are
//! `app/pickers.rs`'.

use super::super::pickers::{Entry, Pick};
use super::super::{App, Effect};
use super::composer::ComposerKeys;
use crate::tui::keymap::Action;
use crate::tui::transcript::Level;

/// The command palette in front (the message line starts with the `/` that opened it).
pub(super) struct PaletteKeys<'a>(pub(super) &'a mut App);

impl PaletteKeys<'_> {
    pub(super) fn handle(self, action: Action) -> Vec<Effect> {
        let app = self.0;
        let n = app.palette_entries().len();
        let pick = match app.palette.as_mut() {
            Some(p) => p.handle(action, n),
            None => Pick::Pass,
        };
        match pick {
            Pick::Stay => Vec::new(),
            Pick::Close => {
                app.palette = None;
                Vec::new()
            }
            Pick::Complete(i) => {
                app.complete_palette_entry(i);
                Vec::new()
            }
            Pick::Take(i) => app.run_palette_entry(i),
            Pick::Pass => ComposerKeys(app).handle(action),
        }
    }
}

impl App {
    /// Tab in the palette: entry `i`'s name on the message line, its arguments kept.
    fn complete_palette_entry(&mut self, i: usize) {
        let chosen = self
            .palette_entries()
            .get(i)
            .map(|e| (e.name().to_string(), matches!(e, Entry::Prompt(_))));
        let Some((name, prompt)) = chosen else {
            return;
        };
        let args = self
            .palette_query()
            .and_then(|(_, a)| a)
            .unwrap_or_default();
        let space = if prompt && args.is_empty() { " " } else { "" };
        let text = format!("/{name}{space}{args}");
        self.composer.input.set_text(&text);
        self.refresh_pickers();
    }

    /// Enter in the palette on entry `selected`: run the chosen command or send the chosen prompt file; with
    /// nothing chosen, send the text as it is.
    fn run_palette_entry(&mut self, selected: usize) -> Vec<Effect> {
        let chosen = match self.palette_entries().get(selected) {
            Some(Entry::Command(bd)) => Ok(*bd),
            Some(Entry::Prompt(p)) => Err(Some((*p).clone())),
            None => Err(None),
        };
        self.palette = None;
        match chosen {
            Ok(bd) => {
                self.composer.input.take();
                self.composer.pastes.clear();
                self.act(bd.action, bd.context)
            }
            Err(Some(prompt)) => {
                let text = self.composer.message_text();
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
                self.composer.pastes.clear();
                self.composer.input.set_text(&expanded);
                self.send_message()
            }
            Err(None) => self.send_message(),
        }
    }
}
