//! A text field (the message line, rejection feedback, a file name, a search): the text, the
//! cursor and the editing operations on them, nothing else. Which keys submit or cancel is the
//! key map's business. The text may hold several lines (the message line inserts them); the
//! line operations (start and end, up and down, kill to the end) act on the cursor's line.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_width::UnicodeWidthStr;

/// See the module docs. The cursor is a char index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextInput {
    text: String,
    cursor: usize,
}

impl TextInput {
    pub fn with_text(text: &str) -> Self {
        Self {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Replace the text, the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        *self = Self::with_text(text);
    }

    /// The cursor, as a char index into the text.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    fn byte(&self, char_idx: usize) -> usize {
        self.text
            .char_indices()
            .nth(char_idx)
            .map(|(i, _)| i)
            .unwrap_or(self.text.len())
    }

    fn chars(&self) -> Vec<char> {
        self.text.chars().collect()
    }

    /// Insert `s` at the cursor, which moves past it.
    pub fn insert_str(&mut self, s: &str) {
        let at = self.byte(self.cursor);
        self.text.insert_str(at, s);
        self.cursor += s.chars().count();
    }

    /// Start a new line at the cursor.
    pub fn newline(&mut self) {
        self.insert_str("\n");
    }

    /// The text before the cursor.
    pub fn before_cursor(&self) -> &str {
        &self.text[..self.byte(self.cursor)]
    }

    /// Delete the `n` chars before the cursor.
    pub fn delete_back(&mut self, n: usize) {
        let from = self.cursor.saturating_sub(n);
        let (a, b) = (self.byte(from), self.byte(self.cursor));
        self.text.replace_range(a..b, "");
        self.cursor = from;
    }

    /// The char index where the word before the cursor starts (spaces before it skipped).
    fn word_start(&self) -> usize {
        let chars = self.chars();
        let mut i = self.cursor;
        while i > 0 && chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    /// The char index where the word after the cursor ends (spaces before it skipped).
    fn word_end(&self) -> usize {
        let chars = self.chars();
        let mut i = self.cursor;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        while i < chars.len() && !chars[i].is_whitespace() {
            i += 1;
        }
        i
    }

    /// Ctrl-W: delete the word before the cursor (and the spaces after it).
    pub fn delete_word_back(&mut self) {
        let n = self.cursor - self.word_start();
        self.delete_back(n);
    }

    /// Alt-B: to the start of the word before the cursor.
    pub fn word_left(&mut self) {
        self.cursor = self.word_start();
    }

    /// Alt-F: to the end of the word after the cursor.
    pub fn word_right(&mut self) {
        self.cursor = self.word_end();
    }

    /// The char indices where the cursor's line starts and ends (before its newline).
    fn line_bounds(&self) -> (usize, usize) {
        let chars = self.chars();
        let mut start = self.cursor.min(chars.len());
        while start > 0 && chars[start - 1] != '\n' {
            start -= 1;
        }
        let mut end = self.cursor.min(chars.len());
        while end < chars.len() && chars[end] != '\n' {
            end += 1;
        }
        (start, end)
    }

    /// Home: to the start of the cursor's line.
    pub fn line_start(&mut self) {
        self.cursor = self.line_bounds().0;
    }

    /// End: to the end of the cursor's line.
    pub fn line_end(&mut self) {
        self.cursor = self.line_bounds().1;
    }

    /// Ctrl-K: delete from the cursor to the end of its line; at the end of a line, join the
    /// next one to it.
    pub fn kill_to_line_end(&mut self) {
        let (_, end) = self.line_bounds();
        let end = if end == self.cursor {
            (end + 1).min(self.text.chars().count())
        } else {
            end
        };
        let (a, b) = (self.byte(self.cursor), self.byte(end));
        self.text.replace_range(a..b, "");
    }

    /// The cursor's line (0-based) and how many lines the text has.
    pub fn cursor_line(&self) -> (usize, usize) {
        let line = self.before_cursor().matches('\n').count();
        (line, self.text.matches('\n').count() + 1)
    }

    /// Whether the cursor is on the first line.
    pub fn on_first_line(&self) -> bool {
        self.cursor_line().0 == 0
    }

    /// Whether the cursor is on the last line.
    pub fn on_last_line(&self) -> bool {
        let (line, lines) = self.cursor_line();
        line + 1 == lines
    }

    /// Up (`Back`) or down a line, keeping the column where the other line is long enough;
    /// false on the first (last) line, where nothing moves.
    pub fn line_move(&mut self, to: crate::tui::Direction) -> bool {
        let (start, end) = self.line_bounds();
        let col = self.cursor - start;
        let chars = self.chars();
        match to {
            crate::tui::Direction::Back => {
                if start == 0 {
                    return false;
                }
                let prev_end = start - 1;
                let mut prev_start = prev_end;
                while prev_start > 0 && chars[prev_start - 1] != '\n' {
                    prev_start -= 1;
                }
                self.cursor = prev_start + col.min(prev_end - prev_start);
            }
            crate::tui::Direction::Forward => {
                if end >= chars.len() {
                    return false;
                }
                let next_start = end + 1;
                let mut next_end = next_start;
                while next_end < chars.len() && chars[next_end] != '\n' {
                    next_end += 1;
                }
                self.cursor = next_start + col.min(next_end - next_start);
            }
        }
        true
    }

    /// Put the cursor at the end of the first line.
    pub fn to_first_line_end(&mut self) {
        self.cursor = self
            .text
            .split('\n')
            .next()
            .map_or(0, |l| l.chars().count());
    }

    /// Apply an editing key; false when the key is not an editing key.
    pub fn handle(&mut self, key: &KeyEvent) -> bool {
        let len = self.text.chars().count();
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('u') if ctrl => {
                self.text.clear();
                self.cursor = 0;
            }
            KeyCode::Char('a') if ctrl => self.line_start(),
            KeyCode::Char('e') if ctrl => self.line_end(),
            KeyCode::Char('w') if ctrl => self.delete_word_back(),
            KeyCode::Char('k') if ctrl => self.kill_to_line_end(),
            KeyCode::Char('b') if alt => self.word_left(),
            KeyCode::Char('f') if alt => self.word_right(),
            KeyCode::Char(_) if ctrl || alt => return false,
            KeyCode::Char(c) => {
                let at = self.byte(self.cursor);
                self.text.insert(at, c);
                self.cursor += 1;
            }
            KeyCode::Backspace if self.cursor > 0 => self.delete_back(1),
            KeyCode::Delete if self.cursor < len => {
                let at = self.byte(self.cursor);
                self.text.remove(at);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(len),
            KeyCode::Home => self.line_start(),
            KeyCode::End => self.line_end(),
            KeyCode::Backspace | KeyCode::Delete => {}
            _ => return false,
        }
        true
    }

    /// The cursor's column in cells, on its line.
    pub fn cursor_col(&self) -> usize {
        let before = self.before_cursor();
        let line = before.rsplit('\n').next().unwrap_or(before);
        line.width()
    }
}

/// A pasted text as a field takes it: line ends made `\n` (terminals send `\r` for them),
/// tabs kept, other control characters dropped.
pub fn clean_paste(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::Direction;

    fn k(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn edits_in_the_middle() {
        let mut t = TextInput::with_text("héllo");
        t.handle(&k(KeyCode::Left));
        t.handle(&k(KeyCode::Backspace));
        t.handle(&k(KeyCode::Char('L')));
        assert_eq!(t.text(), "hélLo");
        assert_eq!(t.cursor_col(), 4);
        assert!(!t.handle(&k(KeyCode::F(2))));
        t.handle(&KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(t.take(), "");
    }

    #[test]
    fn words_and_lines() {
        let mut t = TextInput::with_text("fix the  test");
        t.delete_word_back();
        assert_eq!(t.text(), "fix the  ");
        t.delete_word_back();
        assert_eq!(t.text(), "fix ");
        t.word_left();
        assert_eq!(t.cursor(), 0);
        t.word_right();
        assert_eq!(t.cursor(), 3);
        t.kill_to_line_end();
        assert_eq!(t.text(), "fix");

        let mut t = TextInput::with_text("one\ntwo three\nsix");
        assert_eq!(t.cursor_line(), (2, 3));
        assert!(t.on_last_line() && !t.on_first_line());
        assert!(t.line_move(Direction::Back));
        assert_eq!((t.cursor_line().0, t.cursor_col()), (1, 3));
        t.kill_to_line_end();
        assert_eq!(t.text(), "one\ntwo\nsix");
        t.kill_to_line_end();
        assert_eq!(t.text(), "one\ntwosix");
        t.line_start();
        assert_eq!(t.cursor_col(), 0);
        t.line_end();
        assert_eq!(t.cursor_col(), 6);
        assert!(t.line_move(Direction::Back));
        assert_eq!(
            t.cursor_col(),
            3,
            "the column is kept where the line is long enough"
        );
        assert!(!t.line_move(Direction::Back));
        t.newline();
        assert_eq!(t.text(), "one\n\ntwosix");
    }

    #[test]
    fn pastes_keep_their_lines() {
        assert_eq!(
            clean_paste("a\r\nb\rc\n\td\u{7}"),
            "a\nb\nc\n\td",
            "CR and CRLF become LF, tabs stay, a bell goes"
        );
    }
}
