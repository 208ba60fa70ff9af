//! The message line's two pickers: the command palette (`/` on an empty message line: the
//! key table's named commands and the prompt files, filtered as the name is typed) and the
//! file picker (`@`: the repository's paths, fuzzy-filtered by what follows the `@`). Both
//! live on the message line's own text: the palette reads the name and arguments after the
//! `/`, the picker the word after the `@`, and each closes when the text no longer has that
//! shape.
//!
//! Owns what the pickers list and how their choice moves ([`Palette::handle`],
//! [`PathPicker::handle`]); what taking an entry does is `app/keys/palette.rs`' and
//! `app/keys/path_picker.rs`'. Does not own matching (`crate::tui::fuzzy`),
//! prompt files (`crate::tui::prompts`), listing the repository (the runner, on
//! [`super::Effect::ListPaths`]) or drawing (`crate::tui::views`).

use super::{App, Effect};
use crate::tui::fuzzy;
use crate::tui::keymap::{self, Action, Binding};
use crate::tui::prompts::PromptFile;
use crate::tui::transcript::Level;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

/// Most paths the file picker keeps of a query's matches.
pub const PATH_MATCHES: usize = 50;

/// The command palette, open while the message line starts with `/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Palette {
    /// The chosen entry, an index into [`App::palette_entries`].
    pub selected: usize,
}

/// The file picker, open while the cursor is in the word that starts with its `@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPicker {
    /// Where the `@` is, as a char index into the message line.
    pub at: usize,
    /// The chosen path, an index into [`App::path_matches`].
    pub selected: usize,
    /// The query [`PathPicker::matches`] were ranked for (`None`: not ranked yet), so that a
    /// large repository is ranked once per key typed, not once per frame.
    ranked_for: Option<String>,
    matches: Vec<String>,
}

/// What a picker's own key asks of the App, once the picker has moved its choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The choice moved (or nothing happened).
    Stay,
    /// Close the picker, the message line as it is.
    Close,
    /// Put the name of entry `i` on the message line (the palette's Tab).
    Complete(usize),
    /// Take entry `i`: run the command or send the prompt file; put the path on the line.
    Take(usize),
    /// Not one of the picker's keys: the message line's.
    Pass,
}

impl Palette {
    /// An action on the palette of `entries` entries.
    pub fn handle(&mut self, action: Action, entries: usize) -> Pick {
        match action {
            Action::PrevEntry => self.selected = step(self.selected, entries, false),
            Action::NextEntry => self.selected = step(self.selected, entries, true),
            Action::Cancel => return Pick::Close,
            Action::Complete => return Pick::Complete(self.selected),
            Action::Submit => return Pick::Take(self.selected),
            _ => return Pick::Pass,
        }
        Pick::Stay
    }
}

impl PathPicker {
    /// An action on the file picker showing `matches` paths.
    pub fn handle(&mut self, action: Action, matches: usize) -> Pick {
        match action {
            Action::PrevEntry => self.selected = step(self.selected, matches, false),
            Action::NextEntry => self.selected = step(self.selected, matches, true),
            Action::Cancel => return Pick::Close,
            Action::Submit => return Pick::Take(self.selected),
            _ => return Pick::Pass,
        }
        Pick::Stay
    }
}

/// The repository's paths for the file picker, as the runner listed them: read again each
/// time the picker opens, the last listing used meanwhile.
#[derive(Debug, Clone, Default)]
pub struct PathList {
    /// The last listing (`None`: none has come back yet).
    pub paths: Option<Arc<Vec<String>>>,
    /// A listing was asked for and has not come back.
    pub reading: bool,
}

/// One entry of the palette.
#[derive(Debug, Clone, Copy)]
pub enum Entry<'a> {
    /// A named binding of the key table: runs its action.
    Command(&'static Binding),
    /// A prompt file: sends its text.
    Prompt(&'a PromptFile),
}

impl Entry<'_> {
    pub fn name(&self) -> &str {
        match self {
            Entry::Command(bd) => bd.command.unwrap_or_default(),
            Entry::Prompt(p) => &p.name,
        }
    }

    /// What the palette says of it: the binding's help, the prompt's description.
    pub fn summary(&self) -> &str {
        match self {
            Entry::Command(bd) => bd.help,
            Entry::Prompt(p) => p.summary(),
        }
    }
}

/// Whether `key` is `c` typed with no modifier but Shift.
fn typed(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c) && (key.modifiers - KeyModifiers::SHIFT).is_empty()
}

impl App {
    /// Before a key types on the message line: what it opens once typed (`/` on an empty
    /// line the palette, `@` at a word's start the file picker).
    pub(super) fn picker_opened_by(&self, key: &KeyEvent) -> Option<Opens> {
        if typed(key, '/') && self.composer.input.text().is_empty() && self.palette.is_none() {
            return Some(Opens::Palette);
        }
        let at_word_start = self
            .composer
            .input
            .before_cursor()
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if typed(key, '@') && at_word_start && self.options.repo.is_some() {
            return Some(Opens::Paths {
                at: self.composer.input.cursor(),
            });
        }
        None
    }

    /// After a key typed: open what it opened (the file picker asks for a new listing of the
    /// repository unless one is being read).
    pub(super) fn open_picker(&mut self, opens: Opens) -> Vec<Effect> {
        match opens {
            Opens::Palette => {
                self.palette = Some(Palette::default());
                Vec::new()
            }
            Opens::Paths { at } => {
                self.picker = Some(PathPicker {
                    at,
                    selected: 0,
                    ranked_for: None,
                    matches: Vec::new(),
                });
                if self.paths.reading {
                    return Vec::new();
                }
                self.paths.reading = true;
                vec![Effect::ListPaths]
            }
        }
    }

    /// After any change to the message line: close a picker whose text is gone, and keep
    /// each choice within its list.
    pub(super) fn refresh_pickers(&mut self) {
        if !self.composer.input.text().starts_with('/') || !self.message_line_open() {
            self.palette = None;
        }
        if self.palette.is_some() {
            let n = self.palette_entries().len();
            if let Some(p) = self.palette.as_mut() {
                p.selected = p.selected.min(n.saturating_sub(1));
            }
        }
        let query = self.picker_query().map(str::to_string);
        if query.is_none() || !self.message_line_open() {
            self.picker = None;
        }
        let paths = self.paths.paths.clone();
        if let (Some(p), Some(query), Some(paths)) = (self.picker.as_mut(), query, paths) {
            if p.ranked_for.as_deref() != Some(query.as_str()) {
                p.matches = fuzzy::rank(&query, paths.iter().map(String::as_str), PATH_MATCHES)
                    .into_iter()
                    .map(|i| paths[i].clone())
                    .collect();
                p.ranked_for = Some(query);
            }
            p.selected = p.selected.min(p.matches.len().saturating_sub(1));
        }
    }

    /// The palette's name and arguments: what follows the `/` up to the first whitespace,
    /// and the rest (`None` for the rest while only the name is typed).
    pub fn palette_query(&self) -> Option<(&str, Option<&str>)> {
        let text = self.composer.input.text().strip_prefix('/')?;
        Some(match text.find(char::is_whitespace) {
            Some(i) => (&text[..i], Some(&text[i..])),
            None => (text, None),
        })
    }

    /// What the palette lists for the text typed: while the name is typed, every command and
    /// prompt file that matches it (fuzzily, best first); once arguments follow, the ones of
    /// exactly that name.
    pub fn palette_entries(&self) -> Vec<Entry<'_>> {
        let Some((name, args)) = self.palette_query() else {
            return Vec::new();
        };
        let all: Vec<Entry<'_>> = keymap::commands()
            .map(Entry::Command)
            .chain(self.prompts.iter().map(Entry::Prompt))
            .collect();
        if args.is_some() {
            return all.into_iter().filter(|e| e.name() == name).collect();
        }
        fuzzy::rank(name, all.iter().map(|e| e.name()), all.len())
            .into_iter()
            .map(|i| all[i])
            .collect()
    }

    /// What follows the picker's `@` up to the cursor, while the picker is open and that is
    /// one word.
    pub fn picker_query(&self) -> Option<&str> {
        let p = self.picker.as_ref()?;
        let before = self.composer.input.before_cursor();
        let (at_byte, at_char) = before.char_indices().nth(p.at)?;
        if at_char != '@' {
            return None;
        }
        let query = &before[at_byte + 1..];
        (!query.contains(char::is_whitespace)).then_some(query)
    }

    /// The repository's paths that match the picker's query, best first (at most
    /// [`PATH_MATCHES`]).
    pub fn path_matches(&self) -> &[String] {
        self.picker.as_ref().map_or(&[], |p| p.matches.as_slice())
    }

    /// The repository's paths, listed by the runner (or why not).
    pub fn on_paths(&mut self, result: Result<Vec<String>, crate::tui::actions::ActionError>) {
        self.paths.reading = false;
        match result {
            Ok(paths) => {
                self.paths.paths = Some(Arc::new(paths));
                if let Some(p) = self.picker.as_mut() {
                    p.ranked_for = None;
                }
            }
            Err(e) => {
                if self.paths.paths.is_none() {
                    self.picker = None;
                }
                self.transcript.notice(
                    Level::Error,
                    format!("the file picker could not list the repository: {e}"),
                );
            }
        }
        self.refresh_pickers();
    }
}

/// The entry after (`forward`) or before `selected` in a list of `n`, round the ends.
fn step(selected: usize, n: usize, forward: bool) -> usize {
    let n = n.max(1);
    if forward {
        (selected + 1) % n
    } else {
        (selected + n - 1) % n
    }
}

/// What a key typed on the message line opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Opens {
    Palette,
    Paths { at: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picker_moves_its_choice_round_the_ends_and_passes_other_keys_on() {
        let mut p = Palette::default();
        assert_eq!(p.handle(Action::PrevEntry, 3), Pick::Stay);
        assert_eq!(p.selected, 2);
        p.handle(Action::NextEntry, 3);
        assert_eq!(p.selected, 0);
        assert_eq!(p.handle(Action::Complete, 3), Pick::Complete(0));
        assert_eq!(p.handle(Action::Submit, 3), Pick::Take(0));
        assert_eq!(p.handle(Action::Cancel, 3), Pick::Close);
        assert_eq!(p.handle(Action::WordLeft, 3), Pick::Pass);
        let mut f = PathPicker {
            at: 0,
            selected: 0,
            ranked_for: None,
            matches: Vec::new(),
        };
        f.handle(Action::NextEntry, 2);
        assert_eq!(f.handle(Action::Submit, 2), Pick::Take(1));
        // The file picker has no completion: Tab is the message line's.
        assert_eq!(f.handle(Action::Complete, 2), Pick::Pass);
    }
}
