//! The message line's state: its text, the pastes folded on it, the messages sent in this
//! repository and their search (Ctrl-R), and Esc armed on an empty line; and what its
//! editing keys do to them ([`Composer::handle`]: new lines, word and line motions, the
//! history). Does not own sending, pastes arriving, the draft in `$EDITOR` or Esc's meaning
//! (the App's, in `app/keys/composer.rs`), nor drawing (`views`).

use crate::tui::history::{History, Recall};
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;
use crate::tui::Direction;

/// See the module docs.
#[derive(Debug, Default)]
pub struct Composer {
    pub input: TextInput,
    /// Pastes folded on the message line: (the label shown, the text sent in its place).
    pub pastes: Vec<(String, String)>,
    /// The messages sent in this repository, for Up and Down on the message line.
    pub sent: History,
    /// A search of the messages sent (Ctrl-R), while one is typed.
    pub recall: Option<Recall>,
    /// Esc was pressed on an empty message line: a second Esc asks which turn to rewind to.
    pub(crate) esc_armed: bool,
}

impl Composer {
    /// The editing keys of the message line; `false`: not one of them.
    pub fn handle(&mut self, action: Action) -> bool {
        use Action as A;
        match action {
            A::Newline => self.input.newline(),
            A::HistoryPrev => self.line_or_history(Direction::Back),
            A::HistoryNext => self.line_or_history(Direction::Forward),
            A::DeleteWordBack => self.input.delete_word_back(),
            A::KillToLineEnd => self.input.kill_to_line_end(),
            A::WordLeft => self.input.word_left(),
            A::WordRight => self.input.word_right(),
            A::LineStart => self.input.line_start(),
            A::LineEnd => self.input.line_end(),
            A::SearchHistory => {
                self.recall = Some(Recall {
                    draft: self.input.text().to_string(),
                    ..Default::default()
                });
                self.recall_step(false);
            }
            _ => return false,
        }
        true
    }

    /// Backspace right after a folded paste's label deletes the label (and the paste) whole.
    pub fn delete_folded_paste(&mut self) -> bool {
        let before = self.input.before_cursor();
        let Some(i) = self
            .pastes
            .iter()
            .position(|(l, _)| before.ends_with(l.as_str()))
        else {
            return false;
        };
        let (label, _) = self.pastes.remove(i);
        self.input.delete_back(label.chars().count());
        true
    }

    /// The message as it is sent: the line's text with each folded paste put back whole.
    pub fn message_text(&self) -> String {
        let mut text = self.input.text().to_string();
        for (label, pasted) in &self.pastes {
            if let Some(at) = text.find(label.as_str()) {
                text.replace_range(at..at + label.len(), pasted);
            }
        }
        text
    }

    /// The line is sent (or handed on): empty it, and keep `text` in the history.
    pub fn take(&mut self, text: &str) {
        self.input.take();
        self.pastes.clear();
        self.sent.push(text);
    }

    /// Up or Down: the line above or below, or from the first (last) line the previous
    /// (next) message of the history.
    pub fn line_or_history(&mut self, to: Direction) {
        if self.input.line_move(to) {
            return;
        }
        let recalled = match to {
            Direction::Back => {
                let current = self.input.text().to_string();
                self.sent.back(&current).map(str::to_string)
            }
            Direction::Forward => self.sent.forward(),
        };
        let Some(text) = recalled else {
            return;
        };
        self.pastes.clear();
        self.input.set_text(&text);
        if to == Direction::Back {
            // On the first line, so that Up goes on to the older message.
            self.input.to_first_line_end();
        }
    }

    /// Search the messages sent again for what is typed: from the newest, or (`older`) from
    /// before the one found. The line shows the message found, or the draft when none
    /// matches.
    pub fn recall_step(&mut self, older: bool) {
        let Some(r) = self.recall.as_mut() else {
            return;
        };
        let before = match (older, r.found) {
            (true, Some(i)) => i,
            _ => self.sent.entries().len(),
        };
        match self.sent.find(r.query.text(), before) {
            Some(i) => {
                r.found = Some(i);
                let text = self.sent.entries()[i].clone();
                self.pastes.clear();
                self.input.set_text(&text);
            }
            // Ctrl-R past the oldest match keeps the one found.
            None if older => {}
            None => {
                r.found = None;
                let draft = r.draft.clone();
                self.input.set_text(&draft);
            }
        }
    }

    /// Enter (keep the message found on the line), Esc (the line as it was) or Ctrl-R (an
    /// older match) in a search of the messages sent.
    pub fn recall_choice(&mut self, action: Action) {
        match action {
            Action::OlderMatch => self.recall_step(true),
            Action::Cancel => {
                if let Some(r) = self.recall.take() {
                    self.input.set_text(&r.draft);
                }
            }
            _ => self.recall = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_and_its_search_fill_the_line_and_give_the_draft_back() {
        let mut c = Composer {
            sent: History::new(vec!["cargo test".into(), "fix the parser".into()]),
            ..Composer::default()
        };
        c.input.insert_str("dra");
        assert!(c.handle(Action::HistoryPrev));
        assert_eq!(c.input.text(), "fix the parser");
        c.handle(Action::HistoryPrev);
        assert_eq!(c.input.text(), "cargo test");
        c.handle(Action::HistoryNext);
        c.handle(Action::HistoryNext);
        assert_eq!(c.input.text(), "dra");
        // Ctrl-R: what is typed finds the newest match; Esc gives the draft back.
        assert!(c.handle(Action::SearchHistory));
        if let Some(r) = c.recall.as_mut() {
            r.query.insert_str("test");
        }
        c.recall_step(false);
        assert_eq!(c.input.text(), "cargo test");
        c.recall_choice(Action::Cancel);
        assert_eq!((c.input.text(), c.recall.is_none()), ("dra", true));
        // Not an editing key.
        assert!(!c.handle(Action::Submit));
    }

    #[test]
    fn a_folded_paste_is_sent_whole_and_deleted_whole() {
        let mut c = Composer::default();
        c.input.insert_str("see [pasted 12 lines]");
        c.pastes
            .push(("[pasted 12 lines]".into(), "the\nlong\ntext".into()));
        assert_eq!(c.message_text(), "see the\nlong\ntext");
        assert!(c.delete_folded_paste());
        assert_eq!((c.input.text(), c.pastes.is_empty()), ("see ", true));
        c.take("see");
        assert_eq!(c.sent.entries().last().map(String::as_str), Some("see"));
        assert!(c.input.text().is_empty());
    }
}
