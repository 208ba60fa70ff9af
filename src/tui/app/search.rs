//! The transcript search as the App keeps it: the field being typed, the query, and which
//! match is in view, and what its keys ask for ([`Search::handle`]). Finding and marking
//! lines is the transcript's (`transcript::search`); the routing of its keys is
//! `app/keys/search.rs`'.

use super::{App, Effect};
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;
use crate::tui::Direction;

/// A search of the transcript.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Search {
    /// Typing the query (`/`); `None` once it is searched for.
    pub field: Option<TextInput>,
    pub query: String,
    /// The match in view: (its number from 1, how many there are); `None`: no match.
    pub found: Option<(usize, usize)>,
}

/// What a key of the search asks of the App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seek {
    Stay,
    /// Search for this query (empty: end the search).
    Find(String),
    /// The next match that way.
    Visit(Direction),
    End,
    /// Not one of the search's keys: the transcript's.
    Pass,
}

impl Search {
    /// An action while the search is in front: its field typed, or its matches visited.
    pub fn handle(&mut self, action: Action) -> Seek {
        let typing = self.field.is_some();
        match action {
            Action::Submit if typing => {
                Seek::Find(self.field.take().map(|mut f| f.take()).unwrap_or_default())
            }
            Action::Cancel => Seek::End,
            Action::NextMatch => Seek::Visit(Direction::Forward),
            Action::PrevMatch => Seek::Visit(Direction::Back),
            _ if typing => Seek::Stay,
            _ => Seek::Pass,
        }
    }
}

impl App {
    /// `/`: start typing a search.
    pub(super) fn start_search(&mut self) -> Vec<Effect> {
        self.search = Some(Search {
            field: Some(TextInput::default()),
            ..Search::default()
        });
        Vec::new()
    }

    /// Enter in the search field on `query`: find the first match from the top of the view
    /// down.
    pub(super) fn submit_search(&mut self, query: String) -> Vec<Effect> {
        if query.trim().is_empty() {
            self.end_search();
            return Vec::new();
        }
        if let Some(s) = self.search.as_mut() {
            s.query = query;
        }
        let top = self.transcript.view_top();
        self.go_to_match(|lines| lines.iter().position(|&l| l >= top).or(Some(0)));
        Vec::new()
    }

    /// `n` / `N`: the next match down or up, wrapping around.
    pub(super) fn step_search(&mut self, to: Direction) -> Vec<Effect> {
        let at = self
            .transcript
            .marked()
            .unwrap_or_else(|| self.transcript.view_top());
        self.go_to_match(|lines| match to {
            Direction::Forward => lines.iter().position(|&l| l > at).or(Some(0)),
            Direction::Back => lines
                .iter()
                .rposition(|&l| l < at)
                .or(lines.len().checked_sub(1)),
        });
        Vec::new()
    }

    fn go_to_match(&mut self, pick: impl FnOnce(&[usize]) -> Option<usize>) {
        let Some(query) = self.search.as_ref().map(|s| s.query.clone()) else {
            return;
        };
        let lines = {
            let ctx = self.render_ctx();
            self.transcript.matching_lines(&query, &ctx)
        };
        let chosen = if lines.is_empty() { None } else { pick(&lines) };
        match chosen {
            Some(i) => {
                self.transcript.show_match(lines[i], &query);
                if let Some(s) = self.search.as_mut() {
                    s.found = Some((i + 1, lines.len()));
                }
            }
            None => {
                self.transcript.clear_match();
                if let Some(s) = self.search.as_mut() {
                    s.found = None;
                }
            }
        }
    }

    /// Esc: no search any more; the view stays.
    pub(super) fn end_search(&mut self) {
        self.search = None;
        self.transcript.clear_match();
    }

    /// What the message line says about the search.
    pub fn search_line(&self) -> Option<String> {
        let s = self.search.as_ref()?;
        if s.field.is_some() {
            return None;
        }
        Some(match s.found {
            Some((n, total)) => format!(
                "search “{}”: match {n} of {total} · n next · N previous · Esc ends",
                s.query
            ),
            None => format!("search “{}”: no match · Esc ends", s.query),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_takes_its_own_keys_and_passes_the_others_on() {
        let mut s = Search {
            field: Some(TextInput::with_text("needle")),
            ..Search::default()
        };
        // Typing: the transcript's keys do nothing; Enter searches for what is typed.
        assert_eq!(s.handle(Action::ScrollDown), Seek::Stay);
        assert_eq!(s.handle(Action::Submit), Seek::Find("needle".into()));
        assert!(s.field.is_none());
        // The matches shown: n and N visit them, the transcript's keys are its own.
        assert_eq!(s.handle(Action::NextMatch), Seek::Visit(Direction::Forward));
        assert_eq!(s.handle(Action::PrevMatch), Seek::Visit(Direction::Back));
        assert_eq!(s.handle(Action::ScrollDown), Seek::Pass);
        assert_eq!(s.handle(Action::Cancel), Seek::End);
    }
}
